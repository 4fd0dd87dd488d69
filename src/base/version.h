// base/version.h — mineru-cpp's own version (the --version flag, the producer of the files it writes).
#pragma once

namespace mineru {

inline constexpr const char* kMineruCppVersion = "0.1.0";

}  // namespace mineru

// ZipWriter against an independent reader (Python's zipfile: CRCs, sizes, names, deflate), and the
// names it must refuse.
#include "server/zip_writer.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "base/mapped_file.h"

namespace mineru::server {
namespace {

std::string Dir(const std::string& name) {
  const std::string d = ::testing::TempDir() + "/zip_" + name;
  ::mkdir(d.c_str(), 0755);
  return d;
}

// Python's zipfile reads the archive back: testzip (every CRC), then "name size sha" lines.
std::string ReadBack(const std::string& zip) {
  const std::string out = zip + ".txt";
  const std::string cmd =
      "python3 -c \"import zipfile,hashlib,sys;z=zipfile.ZipFile(sys.argv[1]);assert z.testzip() is None;"
      "print('\\n'.join('%s %d %s' % (i.filename, i.file_size, hashlib.sha256(z.read(i)).hexdigest()[:12]) "
      "for i in z.infolist()))\" " +
      zip + " > " + out;
  if (std::system(cmd.c_str()) != 0) return "unreadable";
  auto s = ReadFileToString(out);
  return s.ok() ? *s : "unreadable";
}

TEST(ZipWriter, AnIndependentReaderGetsEveryMemberBack) {
  const std::string d = Dir("members");
  ZipWriter zip;
  ASSERT_TRUE(zip.Open(d + "/a.zip").ok());
  const std::string text(10000, 'a');  // deflates
  std::string noise;
  uint32_t x = 12345;
  for (int i = 0; i < 5000; ++i) noise.push_back(static_cast<char>((x = x * 1103515245u + 12345u) >> 24));
  ASSERT_TRUE(zip.Add("markdown.md", text).ok());
  ASSERT_TRUE(zip.Add("images/x.jpg", noise).ok());  // stored: deflate would not shrink it
  ASSERT_TRUE(zip.Add("empty.json", "").ok());
  ASSERT_TRUE(zip.Finish().ok());
  const std::string listing = ReadBack(d + "/a.zip");
  EXPECT_NE(listing.find("markdown.md 10000 "), std::string::npos) << listing;
  EXPECT_NE(listing.find("images/x.jpg 5000 "), std::string::npos) << listing;
  EXPECT_NE(listing.find("empty.json 0 "), std::string::npos) << listing;
}

TEST(ZipWriter, UnsafeNamesAreRefused) {
  const std::string d = Dir("names");
  ZipWriter zip;
  ASSERT_TRUE(zip.Open(d + "/b.zip").ok());
  for (const char* bad : {"", "/etc/passwd", "../x", "a/../../x", "a//b", "a\\b", "a\nb", "./a"}) {
    EXPECT_FALSE(zip.Add(bad, "x").ok()) << bad;
  }
  EXPECT_TRUE(zip.Add("ok/name.txt", "x").ok());
  ASSERT_TRUE(zip.Finish().ok());
  EXPECT_NE(ReadBack(d + "/b.zip").find("ok/name.txt 1 "), std::string::npos);
}

TEST(ZipWriter, ADirectoryBecomesOneArchive) {
  const std::string d = Dir("tree");
  ::mkdir((d + "/doc").c_str(), 0755);
  ::mkdir((d + "/doc/images").c_str(), 0755);
  ASSERT_TRUE(WriteStringToFile(d + "/doc/middle_json.json", "{}").ok());
  ASSERT_TRUE(WriteStringToFile(d + "/doc/images/p.jpg", "jpeg").ok());
  ASSERT_TRUE(ZipDirectory(d + "/doc", d + "/doc.zip").ok());
  const std::string listing = ReadBack(d + "/doc.zip");
  EXPECT_EQ(listing.find("images/p.jpg 4 "), 0u) << listing;  // sorted, paths under the folder
  EXPECT_NE(listing.find("middle_json.json 2 "), std::string::npos) << listing;
}

}  // namespace
}  // namespace mineru::server

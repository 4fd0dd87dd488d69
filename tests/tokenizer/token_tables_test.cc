// The flat vocab and merge tables against std::unordered_map on the same inputs.
#include "tokenizer/token_tables.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace mineru {
namespace {

TEST(VocabTableTest, FindsEveryTextAndNothingElse) {
  std::vector<std::string> texts;
  for (int i = 0; i < 5000; ++i) texts.push_back("t" + std::to_string(i * 7919 % 100003));
  texts.push_back("");  // the empty text is a text like any other
  std::vector<std::pair<std::string_view, int32_t>> entries;
  for (size_t i = 0; i < texts.size(); ++i) entries.emplace_back(texts[i], static_cast<int32_t>(2 * i));
  VocabTable v;
  v.Build(entries);
  EXPECT_EQ(v.size(), texts.size());
  EXPECT_EQ(v.id_limit(), static_cast<int32_t>(2 * texts.size() - 1));
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ(v.Find(texts[i]), static_cast<int32_t>(2 * i)) << texts[i];
    EXPECT_EQ(v.Text(static_cast<int32_t>(2 * i)), texts[i]);
    EXPECT_FALSE(v.Has(static_cast<int32_t>(2 * i + 1)));  // the odd ids are holes
    EXPECT_EQ(v.Text(static_cast<int32_t>(2 * i + 1)), "");
  }
  EXPECT_EQ(v.Find("t100003"), -1);
  EXPECT_EQ(v.Find("x"), -1);
  EXPECT_EQ(v.Text(-1), "");
  EXPECT_EQ(v.Text(1 << 30), "");
}

TEST(VocabTableTest, DuplicatesBehaveAsAMapInsertInOrder) {
  const std::vector<std::pair<std::string_view, int32_t>> entries = {
      {"a", 0}, {"b", 1}, {"a", 5}, {"c", 1}};  // "a" moves to 5; "b" and "c" share id 1
  VocabTable v;
  v.Build(entries);
  EXPECT_EQ(v.Find("a"), 5);
  EXPECT_EQ(v.Find("b"), 1);
  EXPECT_EQ(v.Find("c"), 1);
  EXPECT_EQ(v.Text(1), "c");  // the last text naming id 1
  EXPECT_EQ(v.Text(5), "a");
  EXPECT_FALSE(v.Has(0));  // no text names 0 any more
  EXPECT_EQ(v.id_limit(), 6);
}

TEST(VocabTableTest, EmptyTableFindsNothing) {
  VocabTable v;
  EXPECT_EQ(v.Find("a"), -1);
  v.Build({});
  EXPECT_EQ(v.Find(""), -1);
  EXPECT_EQ(v.id_limit(), 0);
}

TEST(MergeTableTest, AgreesWithAMapUnderGrowthAndReplacement) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> id(0, 300);  // small ids: many keys share a half
  MergeTable t;                                       // no Reserve: Put must grow it
  std::unordered_map<uint64_t, MergeTable::Merge> ref;
  for (int32_t rank = 0; rank < 20000; ++rank) {
    const int32_t a = id(rng), b = id(rng);
    const MergeTable::Merge m{rank, a ^ b};
    t.Put(a, b, m);
    ref[(static_cast<uint64_t>(a) << 32) | static_cast<uint32_t>(b)] = m;
  }
  EXPECT_EQ(t.size(), ref.size());
  for (int32_t a = 0; a <= 301; ++a) {
    for (int32_t b = 0; b <= 301; ++b) {
      const auto it = ref.find((static_cast<uint64_t>(a) << 32) | static_cast<uint32_t>(b));
      const MergeTable::Merge* m = t.Find(a, b);
      ASSERT_EQ(m != nullptr, it != ref.end()) << a << " " << b;
      if (m != nullptr) {
        EXPECT_EQ(m->rank, it->second.rank);  // the later Put of a pair won
        EXPECT_EQ(m->new_id, it->second.new_id);
      }
    }
  }
  const auto entries = t.Entries();
  EXPECT_EQ(entries.size(), ref.size());
  for (const auto& [pair, m] : entries) {
    const auto it = ref.find((static_cast<uint64_t>(pair.first) << 32) | static_cast<uint32_t>(pair.second));
    ASSERT_NE(it, ref.end());
    EXPECT_EQ(it->second.rank, m.rank);
  }
}

TEST(MergeTableTest, LargeIdsAndAFullSmallTable) {
  // 12 pairs fill 16 slots to three quarters: probes run into each other and past the end.
  constexpr int32_t kTop = (1 << 24) - 1;
  MergeTable t;
  t.Reserve(12);
  std::vector<std::pair<int32_t, int32_t>> keys;
  for (int32_t i = 0; i < 12; ++i) keys.emplace_back(kTop - i * 4096, i % 3 == 0 ? kTop - i : i);
  for (int32_t i = 0; i < 12; ++i) t.Put(keys[i].first, keys[i].second, {i, kTop - i});
  EXPECT_EQ(t.size(), 12u);
  for (int32_t i = 0; i < 12; ++i) {
    const MergeTable::Merge* m = t.Find(keys[i].first, keys[i].second);
    ASSERT_NE(m, nullptr) << i;
    EXPECT_EQ(m->rank, i);
    EXPECT_EQ(m->new_id, kTop - i);
    EXPECT_EQ(t.Find(keys[i].second, keys[i].first) != nullptr, keys[i].first == keys[i].second);
  }
  auto entries = t.Entries();
  ASSERT_EQ(entries.size(), 12u);
  std::sort(entries.begin(), entries.end(),
            [](const auto& x, const auto& y) { return x.second.rank < y.second.rank; });
  for (int32_t i = 0; i < 12; ++i) EXPECT_EQ(entries[i].first, keys[i]);  // ids unpacked whole
}

TEST(MergeTableTest, EmptyAndReservedTablesFindNothing) {
  MergeTable t;
  EXPECT_EQ(t.Find(0, 0), nullptr);
  t.Reserve(1000);
  EXPECT_EQ(t.Find(0, 0), nullptr);
  EXPECT_EQ(t.size(), 0u);
  t.Put(0, 0, {3, 4});
  ASSERT_NE(t.Find(0, 0), nullptr);
  EXPECT_EQ(t.Find(0, 0)->new_id, 4);
  EXPECT_EQ(t.Find(0, 1), nullptr);
}

}  // namespace
}  // namespace mineru

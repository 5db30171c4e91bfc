// RecordPool (core/record_pool.hpp): records are reused, and the first lies
// inside the pool, so a root claimed and mapped once allocates no record.
#include "core/record_pool.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace rootspan {
namespace {

struct Record {
  int value = 0;
};

bool inside(const RecordPool<Record> &pool, const Record *record) {
  const auto *begin = reinterpret_cast<const std::byte *>(&pool);
  const auto *at = reinterpret_cast<const std::byte *>(record);
  return at >= begin && at < begin + sizeof pool;
}

TEST(RecordPool, TheFirstRecordLiesInsideThePoolAndTheNextOnTheHeap) {
  RecordPool<Record> pool;
  Record *first = pool.take();
  EXPECT_TRUE(inside(pool, first));
  Record *second = pool.take();
  EXPECT_FALSE(inside(pool, second));
  EXPECT_NE(first, second);
}

TEST(RecordPool, APoolThatTookOneRecordIsThatRecordAndAPointer) {
  // A load's every root holds two pools and takes one record of each: the
  // rest of the pool is made at the second record taken.
  struct Wide {
    char bytes[96] = {};
  };
  EXPECT_LE(sizeof(RecordPool<Wide>), sizeof(Wide) + 2 * sizeof(void *));
  RecordPool<Wide> pool;
  Wide *first = pool.take();
  pool.give_back(first);
  EXPECT_EQ(pool.take(), first);
}

TEST(RecordPool, ARecordGivenBackIsTakenAgainAsItWasLeft) {
  RecordPool<Record> pool;
  Record *first = pool.take();
  Record *second = pool.take();
  first->value = 7;
  second->value = 8;
  pool.give_back(first);
  EXPECT_EQ(pool.take(), first);  // the record inside, while it is free, before any other
  EXPECT_EQ(first->value, 7);
  pool.give_back(second);
  Record *again = pool.take();
  EXPECT_EQ(again, second);
  EXPECT_EQ(again->value, 8);
}

TEST(RecordPool, EveryRecordTakenOrNotIsVisited) {
  RecordPool<Record> pool;
  pool.ready(3);  // the one inside and two more
  std::vector<Record *> taken = {pool.take(), pool.take(), pool.take()};
  pool.give_back(taken[1]);
  std::vector<const Record *> seen;
  pool.for_each([&](Record &record) { seen.push_back(&record); });
  ASSERT_EQ(seen.size(), 3u);
  for (const Record *record : taken) EXPECT_NE(std::find(seen.begin(), seen.end(), record), seen.end());
}

}  // namespace
}  // namespace rootspan

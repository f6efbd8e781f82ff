// SessionPool on a real root: the bound on open sessions, the wait for a free
// one, and a thread getting back the session it used last.
#include "server/session_pool.h"

#include <gtest/gtest.h>

#include <future>
#include <optional>
#include <thread>

#include "testutil/temp_dir.h"
#include "vigil/storage/root.h"

namespace vigil::server {
namespace {

class SessionPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_dir_ = dir_.Join("root");
    ASSERT_TRUE(Root::Init(root_dir_).ok());
  }
  sql::SessionOptions Options() const {
    sql::SessionOptions o;
    o.file_access = sql::FileAccess::kServer;
    return o;
  }

  vigil::testing::TempDir dir_;
  std::string root_dir_;
};

// The session a lease holds, by address (sessions live as long as the pool).
const sql::Session* Held(const SessionPool::Lease& lease) { return &*lease; }

// A lease of `pool`'s, or nullopt (with a test failure) when none came within 10 s.
std::optional<SessionPool::Lease> Take(SessionPool& pool) {
  auto r = pool.Acquire(jobs::Principal{}, std::chrono::milliseconds(10'000));
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return std::nullopt;
  return std::optional<SessionPool::Lease>(std::move(*r));
}

TEST_F(SessionPoolTest, AThreadGetsBackTheSessionItUsedLast) {
  SessionPool pool(root_dir_, Options(), 2);
  const sql::Session* mine = nullptr;
  const sql::Session* other = nullptr;
  const sql::Session* other_again = nullptr;
  std::promise<void> taken, released, gave_back, go;
  std::optional<SessionPool::Lease> a = Take(pool);
  ASSERT_TRUE(a);
  mine = Held(*a);
  // Another thread takes the second session and gives it back after this thread gave its
  // own back: the most recently released session is then not this thread's.
  std::thread t([&] {
    {
      std::optional<SessionPool::Lease> b = Take(pool);
      if (b) other = Held(*b);
      taken.set_value();
      released.get_future().wait();
    }
    gave_back.set_value();
    go.get_future().wait();
    std::optional<SessionPool::Lease> b = Take(pool);
    if (b) other_again = Held(*b);
  });
  taken.get_future().wait();
  a.reset();
  released.set_value();
  gave_back.get_future().wait();
  ASSERT_NE(other, nullptr);
  ASSERT_NE(mine, other);
  for (int round = 0; round < 3; ++round) {
    std::optional<SessionPool::Lease> again = Take(pool);
    ASSERT_TRUE(again);
    EXPECT_EQ(Held(*again), mine) << "round " << round;
  }
  // This thread released its session last; the other thread still gets its own.
  go.set_value();
  t.join();
  EXPECT_EQ(other_again, other);
  EXPECT_EQ(pool.open_count(), 2u);
}

TEST_F(SessionPoolTest, AtMostSizeSessionsAndTheNextWaitsThenIsBusy) {
  SessionPool pool(root_dir_, Options(), 2);
  std::optional<SessionPool::Lease> a = Take(pool);
  std::optional<SessionPool::Lease> b = Take(pool);
  ASSERT_TRUE(a && b);
  EXPECT_NE(Held(*a), Held(*b));
  auto c = pool.Acquire(jobs::Principal{}, std::chrono::milliseconds(50));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kBusy) << c.status().ToString();
  EXPECT_EQ(pool.open_count(), 2u);
  const sql::Session* freed = Held(*b);
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    b.reset();
  });
  std::optional<SessionPool::Lease> d = Take(pool);
  releaser.join();
  ASSERT_TRUE(d);
  EXPECT_EQ(Held(*d), freed);
  EXPECT_EQ(pool.open_count(), 2u);
}

}  // namespace
}  // namespace vigil::server

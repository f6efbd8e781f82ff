// SessionPool on a real root: the bound on open sessions, the wait for a free
// one, each user's share of them, and a thread getting back the session it used
// last.
#include "server/session_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <optional>
#include <thread>

#include "testutil/temp_dir.h"
#include "vigil/common/cancellation.h"
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

// The principal of user `name`.
auth::Principal User(const std::string& name) { return auth::Principal{name, false, {}}; }

// A lease of `pool`'s for `user`, or nullopt (with a test failure) when none came within 10 s.
std::optional<SessionPool::Lease> Take(SessionPool& pool, const std::string& user) {
  auto r = pool.Acquire(User(user), std::chrono::milliseconds(10'000));
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
  std::optional<SessionPool::Lease> a = Take(pool, "u1");
  ASSERT_TRUE(a);
  mine = Held(*a);
  // Another thread takes the second session and gives it back after this thread gave its
  // own back: the most recently released session is then not this thread's.
  std::thread t([&] {
    {
      std::optional<SessionPool::Lease> b = Take(pool, "u2");
      if (b) other = Held(*b);
      taken.set_value();
      released.get_future().wait();
    }
    gave_back.set_value();
    go.get_future().wait();
    std::optional<SessionPool::Lease> b = Take(pool, "u2");
    if (b) other_again = Held(*b);
  });
  taken.get_future().wait();
  a.reset();
  released.set_value();
  gave_back.get_future().wait();
  ASSERT_NE(other, nullptr);
  ASSERT_NE(mine, other);
  for (int round = 0; round < 3; ++round) {
    std::optional<SessionPool::Lease> again = Take(pool, "u1");
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
  std::optional<SessionPool::Lease> a = Take(pool, "u1");
  std::optional<SessionPool::Lease> b = Take(pool, "u2");
  ASSERT_TRUE(a && b);
  EXPECT_NE(Held(*a), Held(*b));
  auto c = pool.Acquire(User("u3"), std::chrono::milliseconds(50));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kBusy) << c.status().ToString();
  EXPECT_EQ(pool.open_count(), 2u);
  const sql::Session* freed = Held(*b);
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    b.reset();
  });
  std::optional<SessionPool::Lease> d = Take(pool, "u3");
  releaser.join();
  ASSERT_TRUE(d);
  EXPECT_EQ(Held(*d), freed);
  EXPECT_EQ(pool.open_count(), 2u);
}

// One user holds at most half of the sessions (at least one); past it the user waits, then is
// Busy naming its share, while another user is served at once.
TEST_F(SessionPoolTest, OneUserHoldsAtMostHalfOfTheSessions) {
  SessionPool pool(root_dir_, Options(), 4);
  EXPECT_EQ(pool.share(), 2u);
  std::optional<SessionPool::Lease> a = Take(pool, "greedy");
  std::optional<SessionPool::Lease> b = Take(pool, "greedy");
  ASSERT_TRUE(a && b);
  auto third = pool.Acquire(User("greedy"), std::chrono::milliseconds(50));
  ASSERT_EQ(third.status().code(), StatusCode::kBusy);
  EXPECT_NE(third.status().message().find("its share"), std::string::npos) << third.status().ToString();
  std::optional<SessionPool::Lease> other = Take(pool, "other");
  ASSERT_TRUE(other);
  EXPECT_EQ(pool.in_use_count(), 3u);
  a.reset();  // the user's own release makes room for its next request
  EXPECT_TRUE(Take(pool, "greedy"));
  SessionPool single(root_dir_, Options(), 1);
  EXPECT_EQ(single.share(), 1u);
}

// A request cancelled while it waits for a session stops waiting with Cancelled.
TEST_F(SessionPoolTest, ACancelledRequestStopsWaiting) {
  SessionPool pool(root_dir_, Options(), 1);
  std::optional<SessionPool::Lease> held = Take(pool, "u1");
  ASSERT_TRUE(held);
  std::atomic<bool> cancelled{false};
  std::future<Status> waiting = std::async(std::launch::async, [&] {
    ScopedCancellation scope(&cancelled);
    return pool.Acquire(User("u2"), std::chrono::hours(1)).status();
  });
  while (pool.waiting_count() == 0) std::this_thread::yield();
  cancelled.store(true);
  EXPECT_EQ(waiting.get().code(), StatusCode::kCancelled);
  EXPECT_EQ(pool.waiting_count(), 0u);
}

}  // namespace
}  // namespace vigil::server

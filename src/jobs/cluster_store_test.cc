// ClusterStore on SQLite (the embedded default): the conformance suite.
#include <gtest/gtest.h>

#include "jobs/cluster_store_conformance.h"
#include "testutil/test_database.h"

namespace vigil::jobs {

INSTANTIATE_TEST_SUITE_P(Sqlite, ClusterStoreConformanceTest, ::testing::Values(testing::SqliteBackend()),
                         testing::BackendName);

}  // namespace vigil::jobs

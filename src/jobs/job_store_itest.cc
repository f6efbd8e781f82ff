// JobStore on PostgreSQL: the conformance suite against the throwaway server
// of the vigil_pg ctest fixture (scripts/pg-test-server.sh).
#include <gtest/gtest.h>

#include "jobs/job_store_conformance.h"
#include "testutil/test_database.h"

namespace vigil::jobs {

INSTANTIATE_TEST_SUITE_P(Postgres, JobStoreConformanceTest, ::testing::Values(testing::PostgresBackend()),
                         testing::BackendName);

}  // namespace vigil::jobs

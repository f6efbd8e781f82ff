#include "vigil/storage/filename.h"

#include <gtest/gtest.h>

namespace vigil {
namespace {

TEST(FilenameTest, TableDirectoriesRoundTrip) {
  const Uuid id = Uuid::Generate();
  auto parts = ParseTableDirName(TableDirName("orders", id));
  ASSERT_TRUE(parts.has_value());
  EXPECT_EQ(parts->table, "orders");
  EXPECT_EQ(parts->incarnation, id);
  parts = ParseTableDirName(LegacyTableDirName("orders"));
  ASSERT_TRUE(parts.has_value());
  EXPECT_FALSE(parts->incarnation.has_value());
  for (const char* bad : {"orders", ".vgl", "9x.vgl", "t.not-a-uuid.vgl", ".t.vgl.importing-x", "a-b.vgl"}) {
    EXPECT_FALSE(ParseTableDirName(bad).has_value()) << bad;
  }
}

TEST(FilenameTest, ClaimPathsAreAllowlistedByVersion) {
  const std::string claim = ClaimManifestPath(12);
  EXPECT_TRUE(IsClaimManifestPath(claim, 12));
  EXPECT_FALSE(IsClaimManifestPath(claim, 13));
  EXPECT_FALSE(IsClaimManifestPath(ManifestPath(12), 12));
  EXPECT_FALSE(IsClaimManifestPath("_versions/12.claim-nope", 12));
  EXPECT_FALSE(IsClaimManifestPath("../" + claim, 12));
  EXPECT_FALSE(IsClaimManifestPath("_versions/../" + claim.substr(10), 12));
  EXPECT_FALSE(IsClaimManifestPath("", 12));
}

TEST(FilenameTest, DroppedNamesCarryTheIncarnation) {
  const std::string id = Uuid::Generate().ToString();
  EXPECT_EQ(DroppedTablePath(id), "_dropped/" + id);
  EXPECT_EQ(ParseDroppedTableName(id), id);
  EXPECT_EQ(ParseDroppedTableName(id + "-second"), id);
  EXPECT_FALSE(ParseDroppedTableName(id + "x").has_value());
  EXPECT_FALSE(ParseDroppedTableName("short").has_value());
}

TEST(FilenameTest, DatasetFilesRoundTrip) {
  EXPECT_EQ(ManifestPath(12), "_versions/12.manifest");
  EXPECT_EQ(ParseManifestName("12.manifest"), 12u);
  for (const char* bad :
       {"012.manifest", "x.manifest", ".manifest", "12.manifest.tmp", "99999999999999999999999.manifest"}) {
    EXPECT_FALSE(ParseManifestName(bad).has_value()) << bad;
  }
  const std::string frag = NewFragmentPath();
  ASSERT_EQ(frag.rfind("data/", 0), 0u);
  EXPECT_TRUE(IsFragmentFileName(frag.substr(5)));
  EXPECT_FALSE(IsFragmentFileName("x.frag"));

  const std::string del = NewDeletionFilePath(7, 42);
  ASSERT_EQ(del.rfind("_deletions/", 0), 0u);
  auto parts = ParseDeletionFileName(del.substr(11));
  ASSERT_TRUE(parts.has_value()) << del;
  EXPECT_EQ(parts->fragment, 7u);
  EXPECT_EQ(parts->version, 42u);
  parts = ParseDeletionFileName("3-9.del");  // written before the random tag
  ASSERT_TRUE(parts.has_value());
  EXPECT_EQ(parts->fragment, 3u);
  for (const char* bad : {"3.del", "3-9-xyz.del", "3-9-0123456789.del", "-9.del", "3-.del", "a-9.del"}) {
    EXPECT_FALSE(ParseDeletionFileName(bad).has_value()) << bad;
  }
  EXPECT_TRUE(IsTempManifestName(TempManifestPath().substr(10)));
  EXPECT_TRUE(IsTempIdentityName(TempIdentityName()));
  EXPECT_EQ(AttemptLockPath("att-1"), "_staging/att-1/attempt.lock");
  EXPECT_TRUE(IsStagingName("att-1"));
  EXPECT_FALSE(IsStagingName(".hidden"));
}

}  // namespace
}  // namespace vigil

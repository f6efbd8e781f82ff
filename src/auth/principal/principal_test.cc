// auth::Principal (include/vigil/auth/principal.h): the privilege order
// ADMIN > ALTER > SHOW on one object, the three scopes (table, database, "*"),
// and that the shapes existing callers build keep their meaning.
#include "vigil/auth/principal.h"

#include <gtest/gtest.h>

namespace vigil::auth {
namespace {

Principal With(std::string object, std::set<Privilege> held) {
  Principal p;
  p.name = "p";
  p.grants[std::move(object)] = std::move(held);
  return p;
}

TEST(PrincipalTest, PrivilegeNamesRoundTrip) {
  for (Privilege p : {Privilege::kShow, Privilege::kAlter, Privilege::kAdmin}) {
    EXPECT_EQ(ParsePrivilege(PrivilegeName(p)), p);
  }
  EXPECT_EQ(PrivilegeName(Privilege::kAdmin), "ADMIN");
  EXPECT_FALSE(ParsePrivilege("admin").has_value());
  EXPECT_FALSE(ParsePrivilege("DROP").has_value());
}

TEST(PrincipalTest, EachPrivilegeImpliesTheWeakerOnes) {
  EXPECT_TRUE(Implies(Privilege::kAdmin, Privilege::kAlter));
  EXPECT_TRUE(Implies(Privilege::kAdmin, Privilege::kShow));
  EXPECT_TRUE(Implies(Privilege::kAlter, Privilege::kShow));
  EXPECT_FALSE(Implies(Privilege::kShow, Privilege::kAlter));
  EXPECT_FALSE(Implies(Privilege::kAlter, Privilege::kAdmin));
}

TEST(PrincipalTest, TableAdminImpliesAlterAndShowOnThatTableOnly) {
  Principal p = With("local.db.docs", {Privilege::kAdmin});
  EXPECT_TRUE(p.Has(Privilege::kAdmin, "local", "db", "docs"));
  EXPECT_TRUE(p.Has(Privilege::kAlter, "local", "db", "docs"));
  EXPECT_TRUE(p.Has(Privilege::kShow, "local", "db", "docs"));
  EXPECT_FALSE(p.Has(Privilege::kShow, "local", "db", "other"));
  EXPECT_FALSE(p.Has(Privilege::kShow, "local", "db", "*"));
  EXPECT_FALSE(p.admin);
  EXPECT_FALSE(p.IsAdmin());
  EXPECT_FALSE(p.HasGlobal(Privilege::kShow));
}

TEST(PrincipalTest, DatabaseAdminCoversEveryTableOfTheDatabase) {
  Principal p = With("local.db.*", {Privilege::kAdmin});
  EXPECT_TRUE(p.Has(Privilege::kAdmin, "local", "db", "any"));
  EXPECT_TRUE(p.Has(Privilege::kAlter, "local", "db", "*"));
  EXPECT_FALSE(p.Has(Privilege::kShow, "local", "db2", "any"));
  EXPECT_FALSE(p.Has(Privilege::kShow, "other", "db", "any"));
  EXPECT_FALSE(p.IsAdmin());
}

TEST(PrincipalTest, GlobalGrantsCoverEveryObject) {
  Principal show = With("*", {Privilege::kShow});
  EXPECT_TRUE(show.Has(Privilege::kShow, "local", "a", "b"));
  EXPECT_TRUE(show.Has(Privilege::kShow, "any", "db", "*"));
  EXPECT_FALSE(show.Has(Privilege::kAlter, "local", "a", "b"));
  EXPECT_TRUE(show.HasGlobal(Privilege::kShow));
  EXPECT_FALSE(show.HasGlobal(Privilege::kAlter));
  EXPECT_FALSE(show.IsAdmin());

  Principal alter = With("*", {Privilege::kAlter});
  EXPECT_TRUE(alter.Has(Privilege::kAlter, "local", "a", "b"));
  EXPECT_TRUE(alter.Has(Privilege::kShow, "local", "a", "b"));
  EXPECT_FALSE(alter.Has(Privilege::kAdmin, "local", "a", "b"));
  EXPECT_FALSE(alter.IsAdmin());

  Principal admin = With("*", {Privilege::kAdmin});
  EXPECT_TRUE(admin.IsAdmin());
  EXPECT_TRUE(admin.Has(Privilege::kAdmin, "local", "a", "b"));
  EXPECT_FALSE(admin.admin);  // the flag is what Authenticate sets; IsAdmin reads both
}

TEST(PrincipalTest, TheAdminFlagIsGlobalAdmin) {
  Principal p = Principal::LocalAdmin();
  EXPECT_TRUE(p.admin);
  EXPECT_TRUE(p.IsAdmin());
  for (Privilege want : {Privilege::kShow, Privilege::kAlter, Privilege::kAdmin}) {
    EXPECT_TRUE(p.Has(want, "local", "db", "t"));
    EXPECT_TRUE(p.HasGlobal(want));
  }
}

// The shapes callers built before ADMIN and "*" existed mean what they meant.
TEST(PrincipalTest, ExistingShapesKeepTheirMeaning) {
  Principal nobody{"nobody", false, {}};
  EXPECT_FALSE(nobody.Has(Privilege::kShow, "local", "db", "t"));
  Principal reader{"r", false, {{"local.db.docs", {Privilege::kShow}}}};
  EXPECT_TRUE(reader.Has(Privilege::kShow, "local", "db", "docs"));
  EXPECT_FALSE(reader.Has(Privilege::kAlter, "local", "db", "docs"));
  EXPECT_FALSE(reader.Has(Privilege::kAdmin, "local", "db", "docs"));
  Principal writer{"w", false, {{"local.db.*", {Privilege::kAlter}}}};
  EXPECT_TRUE(writer.Has(Privilege::kShow, "local", "db", "x"));
  EXPECT_TRUE(writer.Has(Privilege::kAlter, "local", "db", "x"));
  EXPECT_FALSE(writer.Has(Privilege::kAdmin, "local", "db", "x"));
  EXPECT_FALSE(writer.Has(Privilege::kShow, "local", "other", "x"));
  // Objects match exactly (names are case-sensitive).
  EXPECT_FALSE(reader.Has(Privilege::kShow, "local", "db", "Docs"));
}

}  // namespace
}  // namespace vigil::auth

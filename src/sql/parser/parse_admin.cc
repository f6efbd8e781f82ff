// Parser methods: index jobs (RESOLVE, WAIT) and users and grants.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <utility>

#include "sql/parser/parser_internal.h"

namespace vigil::sql::internal {

Status Parser::ParseIndexJobId(int64_t* id) {
  VIGIL_RETURN_IF_ERROR(ExpectWord("INDEX"));
  VIGIL_RETURN_IF_ERROR(ExpectWord("JOB"));
  return ParsePositiveInt("job id", id);
}

Status Parser::ParseResolve(StatementNode* out) {
  ResolveIndexJobStatement s;
  VIGIL_RETURN_IF_ERROR(ParseIndexJobId(&s.job_id));
  VIGIL_RETURN_IF_ERROR(ExpectWord("AS"));
  if (AcceptWord("ACKNOWLEDGED"))
    s.action = ResolveAction::kAcknowledged;
  else if (AcceptWord("FORCE_RELEASE"))
    s.action = ResolveAction::kForceRelease;
  else
    return Expected("ACKNOWLEDGED or FORCE_RELEASE");
  if (PeekWord("WITHOUT")) {
    SourcePos pos = Take().pos;
    if (s.action != ResolveAction::kForceRelease) {
      return Fail(pos, "WITHOUT REFRESH applies only to FORCE_RELEASE");
    }
    VIGIL_RETURN_IF_ERROR(ExpectWord("REFRESH"));
    s.without_refresh = true;
  }
  VIGIL_RETURN_IF_ERROR(ExpectWord("COMMENT"));
  VIGIL_RETURN_IF_ERROR(ParseStringToken("comment string", &s.comment));
  *out = std::move(s);
  return Status::OK();
}

Status Parser::ParseAlterUser(StatementNode* out) {
  AlterUserStatement s;
  VIGIL_RETURN_IF_ERROR(ExpectWord("USER"));
  VIGIL_RETURN_IF_ERROR(ParseIdentifier("user name", &s.name));
  if (AcceptWord("ROTATE")) {
    VIGIL_RETURN_IF_ERROR(ExpectWord("TOKEN"));
    s.action = AlterUserAction::kRotateToken;
  } else if (AcceptWord("DISABLE")) {
    s.action = AlterUserAction::kDisable;
  } else if (AcceptWord("ENABLE")) {
    s.action = AlterUserAction::kEnable;
  } else if (PeekWord("SET") || PeekWord("UNSET")) {
    s.action = PeekWord("SET") ? AlterUserAction::kSetAdmin : AlterUserAction::kUnsetAdmin;
    Take();
    VIGIL_RETURN_IF_ERROR(ExpectWord("ADMIN"));
  } else {
    return Expected("ROTATE TOKEN, DISABLE, ENABLE, SET ADMIN or UNSET ADMIN");
  }
  *out = std::move(s);
  return Status::OK();
}

Status Parser::ParseGrant(bool revoke, StatementNode* out) {
  GrantStatement s;
  s.revoke = revoke;
  const Token& p = Peek();
  std::optional<auth::Privilege> privilege =
      p.kind == TokenKind::kWord ? auth::ParsePrivilege(ToUpperAscii(p.text)) : std::nullopt;
  if (!privilege) return Expected("SHOW, ALTER or ADMIN");
  Take();
  s.privilege = *privilege;
  VIGIL_RETURN_IF_ERROR(ExpectWord("ON"));
  VIGIL_RETURN_IF_ERROR(ParseGrantObject(&s.object));
  VIGIL_RETURN_IF_ERROR(ExpectWord(revoke ? "FROM" : "TO"));
  VIGIL_RETURN_IF_ERROR(ParseIdentifier("user name", &s.user));
  *out = std::move(s);
  return Status::OK();
}

Status Parser::ParseGrantObject(GrantObject* out) {
  *out = GrantObject{};
  if (AcceptOp("*")) {
    out->global = true;
    return Status::OK();
  }
  const SourcePos start = Peek().pos;
  std::vector<std::string> parts(1);
  VIGIL_RETURN_IF_ERROR(ParseIdentifier("*, db.*, db.table or catalog.db.table", &parts[0]));
  bool all_tables = false;
  while (!all_tables && PeekOp(".")) {
    Take();
    if (AcceptOp("*")) {
      all_tables = true;
    } else if (parts.size() == 3) {
      return Fail(Peek().pos, "a grant object has at most three parts: catalog.db.table");
    } else {
      parts.emplace_back();
      VIGIL_RETURN_IF_ERROR(ParseIdentifier("name or '*' after '.'", &parts.back()));
    }
  }
  const size_t n = parts.size() + (all_tables ? 1 : 0);
  if (n == 1) return Fail(start, "a grant object is *, db.*, db.table or catalog.db.table");
  if (n > 3) return Fail(start, "a grant object has at most three parts: catalog.db.*");
  if (!all_tables) {
    out->table = std::move(parts.back());
    parts.pop_back();
  }
  out->database = std::move(parts.back());
  if (parts.size() == 2) out->catalog = std::move(parts[0]);
  return Status::OK();
}

Status Parser::ParseWait(StatementNode* out) {
  WaitIndexJobStatement s;
  VIGIL_RETURN_IF_ERROR(ParseIndexJobId(&s.job_id));
  if (AcceptWord("TIMEOUT")) {
    const Token& t = Peek();
    if (!IsNumber(t) || (t.text.size() > 1 && (t.text[1] == 'x' || t.text[1] == 'X'))) {
      return Expected("seconds");
    }
    errno = 0;
    double v = std::strtod(t.text.c_str(), nullptr);
    if (errno == ERANGE && std::isinf(v)) return Fail(t.pos, "TIMEOUT " + t.text + " is out of range");
    if (!std::isfinite(v) || v < 0) return Fail(t.pos, "TIMEOUT must be a finite number of seconds");
    s.timeout_seconds = v;
    Take();
  }
  *out = s;
  return Status::OK();
}

}  // namespace vigil::sql::internal

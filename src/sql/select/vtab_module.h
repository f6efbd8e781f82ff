// The one adapter from SQLite's virtual-table callbacks to a cursor class, shared by
// every module (vigil_table, vector_search, fts_search, the metadata tables), and the
// pieces of xBestIndex they share. A module writes its cursor as a class:
//
//   struct MyCursor : sqlite3_vtab_cursor {
//     Status Filter(MyVtab* vt, const char* idx_str, int argc, sqlite3_value** argv);
//     Status Next(MyVtab* vt);
//     bool Eof() const;
//     void Column(const MyVtab& vt, sqlite3_context* ctx, int col) const;
//     sqlite3_int64 Rowid() const;
//   };
//
// and gets its sqlite3_module from ReadOnlyModule<MyVtab, MyCursor>(...). MyVtab derives
// from sqlite3_vtab and has a `VtabHost* host`; a failed Status becomes the statement's
// typed error (VtabError). idx_str is never null ("" when xBestIndex set none).
//
// Thread safety: one thread at a time (the engine's connection).
#pragma once

#include <sqlite3.h>

#include <string>

#include "sql/select/vtab.h"

namespace vigil::sql::internal {

template <typename Vtab, typename Cursor>
struct CursorCallbacks {
  static int Open(sqlite3_vtab*, sqlite3_vtab_cursor** out) {
    *out = new Cursor();
    return SQLITE_OK;
  }
  static int Close(sqlite3_vtab_cursor* cur) {
    delete static_cast<Cursor*>(cur);
    return SQLITE_OK;
  }
  static int Filter(sqlite3_vtab_cursor* base, int, const char* idx_str, int argc, sqlite3_value** argv) {
    auto* vt = static_cast<Vtab*>(base->pVtab);
    return Check(vt, static_cast<Cursor*>(base)->Filter(vt, idx_str ? idx_str : "", argc, argv));
  }
  static int Next(sqlite3_vtab_cursor* base) {
    auto* vt = static_cast<Vtab*>(base->pVtab);
    return Check(vt, static_cast<Cursor*>(base)->Next(vt));
  }
  static int Eof(sqlite3_vtab_cursor* base) { return static_cast<Cursor*>(base)->Eof() ? 1 : 0; }
  static int Column(sqlite3_vtab_cursor* base, sqlite3_context* ctx, int col) {
    static_cast<const Cursor*>(base)->Column(*static_cast<const Vtab*>(base->pVtab), ctx, col);
    return SQLITE_OK;
  }
  static int Rowid(sqlite3_vtab_cursor* base, sqlite3_int64* rowid) {
    *rowid = static_cast<const Cursor*>(base)->Rowid();
    return SQLITE_OK;
  }
  static int Check(Vtab* vt, const Status& st) { return st.ok() ? SQLITE_OK : VtabError(vt, vt->host, st); }
};

// The module's own entry points; `create` is null for an eponymous-only module.
struct ModuleEntryPoints {
  decltype(sqlite3_module::xCreate) create = nullptr;
  decltype(sqlite3_module::xConnect) connect = nullptr;
  decltype(sqlite3_module::xBestIndex) best_index = nullptr;
  decltype(sqlite3_module::xDisconnect) disconnect = nullptr;
};

// A read-only module (no xUpdate, no transactions) whose cursor callbacks go to `Cursor`.
template <typename Vtab, typename Cursor>
sqlite3_module ReadOnlyModule(const ModuleEntryPoints& e) {
  using C = CursorCallbacks<Vtab, Cursor>;
  sqlite3_module m{};
  m.iVersion = 1;
  m.xCreate = e.create;
  m.xConnect = e.connect;
  m.xBestIndex = e.best_index;
  m.xDisconnect = e.disconnect;
  m.xDestroy = e.disconnect;
  m.xOpen = C::Open;
  m.xClose = C::Close;
  m.xFilter = C::Filter;
  m.xNext = C::Next;
  m.xEof = C::Eof;
  m.xColumn = C::Column;
  m.xRowid = C::Rowid;
  return m;
}

// ---- xBestIndex ----

// Passes constraint `i` to xFilter as the next argument (*argc counts them); with `omit`,
// SQLite does not check it again (the module applies it exactly).
void PassConstraint(sqlite3_index_info* info, int i, bool omit, int* argc);
// Sets the plan text xFilter receives as idx_str (SQLite frees it).
void SetPlan(sqlite3_index_info* info, const std::string& idx_str);
// Tells SQLite the rows already come ordered when ORDER BY is exactly `column` in the
// direction `desc`.
void ConsumeOrderBy(sqlite3_index_info* info, int column, bool desc);

// The names of the columns `used` marks (bit i: column i; bit 63: 63 and above), and `map`
// from each schema column to its position among them (-1 when not used).
std::vector<std::string> UsedColumns(const Schema& schema, uint64_t used, std::vector<int>* map);

}  // namespace vigil::sql::internal

// The extension module vigil._vigil: an embedded root's SQL session for Python.
// Statements go in as text; results come out as plain Python values (None, int,
// float, str, bytes). A failed statement raises _vigil.VigilError(code, message),
// which the pure-Python package maps to its typed exceptions (vigil/errors.py).
// The GIL is released while the engine runs. Thread safety: one Session per
// thread at a time, as sql::Session; the module adds a mutex per Session.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <variant>

#include "numpy_columns.h"
#include "vigil/common/mutex.h"
#include "vigil/jobs/job_state.h"
#include "vigil/sql/job_detail.h"
#include "vigil/sql/session.h"
#include "vigil/storage/root.h"

namespace py = pybind11;

namespace vigil::python {
namespace {

// Raised for every failed call: args are (code name, sub-code or "", message).
PyObject* g_vigil_error = nullptr;

[[noreturn]] void Raise(const Status& st) {
  PyErr_SetObject(
      g_vigil_error,
      py::make_tuple(std::string(StatusCodeName(st.code())), std::string(SubCodeOf(st.message())), st.message()).ptr());
  throw py::error_already_set();
}

py::object ToPython(const sql::Value& v) {
  return std::visit(
      [](const auto& x) -> py::object {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return py::none();
        } else if constexpr (std::is_same_v<T, int64_t>) {
          return py::int_(x);
        } else if constexpr (std::is_same_v<T, double>) {
          return py::float_(x);
        } else if constexpr (std::is_same_v<T, std::string>) {
          return py::str(x);
        } else if constexpr (std::is_same_v<T, sql::FloatVector>) {
          return py::array_t<float>(static_cast<py::ssize_t>(x.values.size()), x.values.data());
        } else {
          return py::bytes(x.bytes);
        }
      },
      v);
}

sql::Value FromPython(const py::handle& v) {
  if (v.is_none()) return std::monostate();
  if (py::isinstance<py::bool_>(v)) return static_cast<int64_t>(v.cast<bool>());
  if (py::isinstance<py::int_>(v)) return v.cast<int64_t>();
  if (py::isinstance<py::float_>(v)) return v.cast<double>();
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::isinstance<py::bytes>(v)) return sql::Blob{v.cast<std::string>()};
  throw py::type_error("a bound value must be None, int, float, str or bytes, not " +
                       std::string(py::str(v.get_type().attr("__name__"))));
}

// Starts `<vigil> --root <root> supervise`, which returns once a leader runs (at once when
// one holds the lease). Its notices go to the root's supervise log, not to the caller.
Status StartLeader(const std::string& vigil, const std::string& root) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::vector<std::string> args = {vigil, "--root", root, "supervise"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int err = posix_spawn(&pid, vigil.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) return Status::FromErrno(err, "cannot start " + vigil + " supervise");
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Status::Internal("`vigil supervise` failed to start; see " + root + "/_meta/supervise.log");
  }
  return Status::OK();
}

sql::TableRef Table(const std::string& database, const std::string& table) { return {"", database, table}; }

// (name, kind, nullable, dim, precision, scale, max_length, type text) of each field.
py::list DescribeSchema(const Schema& schema) {
  py::list fields;
  for (const Field& f : schema.fields()) {
    std::string kind = f.type.ToString();
    if (f.type.id == TypeId::kVector) kind = f.type.element == VectorElement::kFloat32 ? "VECTOR32" : "VECTOR16";
    if (f.type.id == TypeId::kDecimal) kind = "DECIMAL";
    if (f.type.id == TypeId::kString) kind = "STRING";
    fields.append(py::make_tuple(f.name, kind, f.nullable, f.type.dim, f.type.precision, f.type.scale,
                                 f.type.max_length, f.type.ToString()));
  }
  return fields;
}

class PySession {
 public:
  // Opens the root at `path`, creating it first when `create` and it does not exist. With
  // `vigil` (the executable's path), a statement that admits or waits for index jobs starts
  // the root's leader when none runs.
  static std::unique_ptr<PySession> Open(const std::string& path, bool create, const std::string& vigil) {
    Result<std::unique_ptr<sql::Session>> session = [&]() -> Result<std::unique_ptr<sql::Session>> {
      py::gil_scoped_release unlocked;
      if (create) {
        Result<Root> made = Root::Init(path);
        if (!made.ok() && !made.status().Is(StatusCode::kAlreadyExists)) return made.status();
      }
      sql::SessionOptions options;
      options.file_access = sql::FileAccess::kClient;  // the caller's own process and files
      if (!vigil.empty()) options.ensure_leader = [vigil, path] { return StartLeader(vigil, path); };
      return sql::Session::Open(path, std::move(options));
    }();
    if (!session.ok()) Raise(session.status());
    return std::make_unique<PySession>(std::move(session).value());
  }

  // The result tuple of a SELECT with `params` bound, as Execute.
  py::tuple Select(const std::string& text, const py::list& params) {
    std::vector<sql::Value> values;
    for (const py::handle& p : params) values.push_back(FromPython(p));
    Result<sql::ResultSet> result = [&] {
      py::gil_scoped_release unlocked;
      MutexLock hold(&mu_);
      return session_->Select(text, values);
    }();
    if (!result.ok()) Raise(result.status());
    return ToTuple(*result);
  }

  // The fields of the newest version of a table (DescribeSchema).
  py::list TableSchema(const std::string& database, const std::string& table) {
    std::shared_ptr<Dataset> ds = OpenVersion(database, table, std::nullopt);
    return DescribeSchema(*ds->schema());
  }

  // Appends the chunks of `chunks` (MakeChunkReader) in one commit; returns the rows appended.
  uint64_t Append(const std::string& database, const std::string& table, const py::iterable& chunks) {
    PendingPythonError pending;
    py::iterator it = py::iter(chunks);
    Result<sql::ResultSet> result = [&] {
      py::gil_scoped_release unlocked;
      MutexLock hold(&mu_);
      return session_->Append(Table(database, table), [&](const SchemaPtr& schema) {
        return Result<std::unique_ptr<RecordBatchReader>>(MakeChunkReader(schema, std::move(it), &pending));
      });
    }();
    if (pending.error) throw std::move(*pending.error);
    if (!result.ok()) Raise(result.status());
    return pending.rows;
  }

  // ReadColumns of a table's `version` (the newest when None).
  py::tuple Read(const std::string& database, const std::string& table, std::optional<uint64_t> version,
                 const std::vector<std::string>& columns) {
    std::shared_ptr<Dataset> ds = OpenVersion(database, table, version);
    Result<py::tuple> read = ReadColumns(*ds, columns);
    if (!read.ok()) Raise(read.status());
    return *read;
  }

  // (version, parent, commit time in microseconds, operation, live rows, fragments) of each
  // version of a table, oldest first.
  py::list Versions(const std::string& database, const std::string& table) {
    std::shared_ptr<Dataset> ds = OpenVersion(database, table, std::nullopt);
    Result<std::vector<VersionInfo>> versions = [&] {
      py::gil_scoped_release unlocked;
      return Dataset::ListVersions(ds->path(), ds->options());
    }();
    if (!versions.ok()) Raise(versions.status());
    py::list out;
    for (const VersionInfo& v : *versions) {
      out.append(py::make_tuple(v.version, v.parent_version, v.txn.timestamp_micros, v.txn.operation, v.live_rows,
                                v.num_fragments));
    }
    return out;
  }

  // (columns, rows, message, admitted job ids, warnings) of one statement.
  py::tuple Execute(const std::string& text) {
    Result<sql::ResultSet> result = [&] {
      py::gil_scoped_release unlocked;
      MutexLock hold(&mu_);
      return session_->Execute(text);
    }();
    if (!result.ok()) Raise(result.status());
    return ToTuple(*result);
  }

  // One index job as the HTTP API's GET /v1/jobs/{id} shows it: {"job": {item: value},
  // "events": [...], "warnings": [...]} with the job-state vocabulary of jobs/job_state.h
  // ("final", "settled", "holds_fence", "resolvable").
  py::dict Job(int64_t job_id) {
    Result<jobs::JobDetail> d = [&] {
      py::gil_scoped_release unlocked;
      MutexLock hold(&mu_);
      return session_->ShowJob(job_id);
    }();
    if (!d.ok()) Raise(d.status());
    py::dict items, out;
    for (const sql::JobItem& item : sql::JobDetailItems(*d)) items[py::str(item.name)] = ToPython(item.value);
    py::list events;
    for (const jobs::JobEvent& e : d->events) events.append(sql::JobEventText(e));
    const jobs::JobState& s = d->job.state;
    out["job"] = items;
    out["events"] = events;
    out["warnings"] = d->warnings;
    out["final"] = jobs::IsFinal(s);
    out["settled"] = jobs::IsSettledStateName(jobs::DerivedState(s), jobs::Name(s.disposition));
    out["holds_fence"] = jobs::HoldsFence(s);
    out["resolvable"] = jobs::IsResolvable(s);
    return out;
  }

  explicit PySession(std::unique_ptr<sql::Session> session) : session_(std::move(session)) {}

 private:
  static py::tuple ToTuple(const sql::ResultSet& result) {
    py::list rows;
    for (const auto& row : result.rows) {
      py::tuple cells(row.size());
      for (size_t i = 0; i < row.size(); ++i) cells[i] = ToPython(row[i]);
      rows.append(std::move(cells));
    }
    return py::make_tuple(result.columns, std::move(rows), result.message, result.admitted_jobs, result.warnings);
  }

  std::shared_ptr<Dataset> OpenVersion(const std::string& database, const std::string& table,
                                       std::optional<uint64_t> version) {
    Result<std::shared_ptr<Dataset>> ds = [&] {
      py::gil_scoped_release unlocked;
      MutexLock hold(&mu_);
      return session_->OpenTableVersion(Table(database, table), version);
    }();
    if (!ds.ok()) Raise(ds.status());
    return *ds;
  }

  Mutex mu_;
  std::unique_ptr<sql::Session> session_ VIGIL_GUARDED_BY(mu_);
};

}  // namespace
}  // namespace vigil::python

PYBIND11_MODULE(_vigil, m) {
  using vigil::python::PySession;
  m.doc() = "Vigil's embedded engine (use the vigil package)";
  static py::exception<std::exception> error(m, "VigilError");
  vigil::python::g_vigil_error = error.ptr();
  py::class_<PySession>(m, "Session")
      .def_static("open", &PySession::Open, py::arg("path"), py::arg("create") = true, py::arg("vigil") = "")
      .def("execute", &PySession::Execute, py::arg("sql"))
      .def("select", &PySession::Select, py::arg("sql"), py::arg("params"))
      .def("schema", &PySession::TableSchema, py::arg("database"), py::arg("table"))
      .def("append", &PySession::Append, py::arg("database"), py::arg("table"), py::arg("chunks"))
      .def("read", &PySession::Read, py::arg("database"), py::arg("table"), py::arg("version"), py::arg("columns"))
      .def("versions", &PySession::Versions, py::arg("database"), py::arg("table"))
      .def("job", &PySession::Job, py::arg("job_id"));
}

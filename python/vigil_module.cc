// The extension module vigil._vigil: an embedded root's SQL session for Python.
// Statements go in as text; results come out as plain Python values (None, int,
// float, str, bytes). A failed statement raises _vigil.VigilError(code, message),
// which the pure-Python package maps to its typed exceptions (vigil/errors.py).
// The GIL is released while the engine runs. Thread safety: one Session per
// thread at a time, as sql::Session; the module adds a mutex per Session.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <variant>

#include "vigil/common/mutex.h"
#include "vigil/sql/session.h"
#include "vigil/storage/root.h"

namespace py = pybind11;

namespace vigil::python {
namespace {

// Raised for every failed call: args are (code name, message).
PyObject* g_vigil_error = nullptr;

[[noreturn]] void Raise(const Status& st) {
  PyErr_SetObject(g_vigil_error, py::make_tuple(std::string(StatusCodeName(st.code())), st.message()).ptr());
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
        } else {
          return py::bytes(x.bytes);
        }
      },
      v);
}

class PySession {
 public:
  // Opens the root at `path`, creating it first when `create` and it does not exist.
  static std::unique_ptr<PySession> Open(const std::string& path, bool create) {
    Result<std::unique_ptr<sql::Session>> session = [&]() -> Result<std::unique_ptr<sql::Session>> {
      py::gil_scoped_release unlocked;
      if (create) {
        Result<Root> made = Root::Init(path);
        if (!made.ok() && !made.status().Is(StatusCode::kAlreadyExists)) return made.status();
      }
      sql::SessionOptions options;
      options.file_access = sql::FileAccess::kClient;  // the caller's own process and files
      return sql::Session::Open(path, std::move(options));
    }();
    if (!session.ok()) Raise(session.status());
    return std::make_unique<PySession>(std::move(session).value());
  }

  // (columns, rows, message, admitted job ids, warnings) of one statement.
  py::tuple Execute(const std::string& text) {
    Result<sql::ResultSet> result = [&] {
      py::gil_scoped_release unlocked;
      MutexLock hold(&mu_);
      return session_->Execute(text);
    }();
    if (!result.ok()) Raise(result.status());
    py::list rows;
    for (const auto& row : result->rows) {
      py::tuple cells(row.size());
      for (size_t i = 0; i < row.size(); ++i) cells[i] = ToPython(row[i]);
      rows.append(std::move(cells));
    }
    return py::make_tuple(result->columns, std::move(rows), result->message, result->admitted_jobs, result->warnings);
  }

  explicit PySession(std::unique_ptr<sql::Session> session) : session_(std::move(session)) {}

 private:
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
      .def_static("open", &PySession::Open, py::arg("path"), py::arg("create") = true)
      .def("execute", &PySession::Execute, py::arg("sql"));
}

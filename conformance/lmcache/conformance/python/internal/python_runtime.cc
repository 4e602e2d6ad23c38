#include "lmcache/conformance/python/internal/python_runtime.h"

#include <unistd.h>

#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace lmcache::conformance::python {
namespace {

namespace fs = std::filesystem;

constexpr double kSwitchIntervalSeconds = 1e-5;

// Where the kit's package may be: $LMCACHE_CONFORMANCE_PYTHONPATH, beside an installed runner
// (<prefix>/bin/../share/lmcache/python), and the source tree this build came from.
std::vector<fs::path> package_roots() {
  std::vector<fs::path> roots;
  if (const char* env = std::getenv("LMCACHE_CONFORMANCE_PYTHONPATH"); env && *env) {
    roots.emplace_back(env);
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) roots.push_back(exe.parent_path().parent_path() / LMCACHE_PYTHON_INSTALL_SUBDIR);
  roots.emplace_back(LMCACHE_PYTHON_SOURCE_DIR);
  return roots;
}

void start() {
  // The interpreter of the libpython this build links (Debian's, prefix LMCACHE_PYTHON_HOME),
  // whatever python3 comes first on PATH: without a home, Python derives its prefix from the
  // first python3 it finds there (a pyenv one would hide Debian's python3-torch). PYTHONHOME,
  // PYTHONPATH and the other PYTHON* variables still apply, as for python3 itself.
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  config.install_signal_handlers = 0;  // the kit's signals stay the kit's
  if (std::getenv("PYTHONHOME") == nullptr) {
    PyStatus status = PyConfig_SetBytesString(&config, &config.home, LMCACHE_PYTHON_HOME);
    if (PyStatus_Exception(status)) {
      PyConfig_Clear(&config);
      throw std::runtime_error("cannot configure the interpreter's home");
    }
  }
  py::initialize_interpreter(&config, 0, nullptr, /*add_program_dir_to_path=*/false);
  {
    py::module_ sys = py::module_::import("sys");
    // Threads switch every 10 us instead of 5 ms: an implementation's own threads interleave
    // with the kit's about as finely as native ones, so the concurrency properties reach its
    // races (docs/python.md, "Thread switches every 10 µs").
    sys.attr("setswitchinterval")(kSwitchIntervalSeconds);
    py::list path = sys.attr("path");
    std::string looked;
    bool found = false;
    for (const fs::path& root : package_roots()) {
      looked += (looked.empty() ? "" : ", ") + root.string();
      if (fs::is_regular_file(root / "lmcache_conformance" / "__init__.py")) {
        path.insert(0, root.string());
        found = true;
        break;
      }
    }
    if (!found) {
      throw std::runtime_error("the kit's Python package lmcache_conformance is not in " + looked +
                               " (set LMCACHE_CONFORMANCE_PYTHONPATH to its parent directory)");
    }
    try {
      py::module_::import("lmcache_conformance._bridge");
    } catch (py::error_already_set& e) {
      rethrow(e, "importing lmcache_conformance");
    }
  }
  // From here on every caller takes the GIL itself (py::gil_scoped_acquire).
  PyEval_SaveThread();
}

}  // namespace

void ensure_interpreter() {
  static std::once_flag once;
  static std::string failure;
  std::call_once(once, [] {
    try {
      start();
    } catch (const std::exception& e) {
      failure = e.what();
      if (PyGILState_Check()) PyEval_SaveThread();
    }
  });
  if (!failure.empty()) throw std::runtime_error("Python: " + failure);
}

py::module_ bridge() { return py::module_::import("lmcache_conformance._bridge"); }

void rethrow(py::error_already_set& error, std::string_view what, bool closed) {
  std::string text;
  try {
    text = bridge().attr("format_exception")(error.value(), error.trace()).cast<std::string>();
  } catch (const std::exception&) {
    text = error.what();
  }
  const bool value_error = error.matches(PyExc_ValueError);
  error.restore();
  PyErr_Clear();
  std::string message = std::string(what) + ": " + text;
  if (closed) throw std::logic_error(std::string(what) + " after close(): " + text);
  if (value_error) throw std::invalid_argument(message);
  throw std::runtime_error(message);
}

PyRef::PyRef(py::object object) : object_(std::move(object)) {}

PyRef::PyRef(const PyRef& other) {
  py::gil_scoped_acquire gil;
  object_ = other.object_;
}

PyRef& PyRef::operator=(const PyRef& other) {
  if (this != &other) {
    py::gil_scoped_acquire gil;
    object_ = other.object_;
  }
  return *this;
}

PyRef::~PyRef() { reset(); }

void PyRef::reset() {
  if (!object_) return;
  py::gil_scoped_acquire gil;
  object_ = py::object();
}

}  // namespace lmcache::conformance::python

// The `wort._wort` extension: wort::Store for Python (the `wort` package re-exports it).
//
// Keys and values are bytes-like (bytes, bytearray, memoryview: any C-contiguous buffer);
// str is refused with TypeError. Every store operation runs with the GIL released, on a
// shared_ptr copy of the Store taken under the GIL, so a close() from another thread meanwhile
// never frees the Store under a running operation: the last holder closes it.
// Each non-ok Status raises the matching subclass of wort.Error (the class per Status is
// built here; python/wort/__init__.py documents the mapping).
#include <pybind11/pybind11.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "wort/index.h"
#include "wort/status.h"
#include "wort/store.h"

namespace py = pybind11;

namespace {

// --- errors -------------------------------------------------------------------------------

constexpr std::size_t kStatusCount = static_cast<std::size_t>(wort::Status::in_use) + 1;

// The exception classes, indexed by Status; slot 0 (ok) is wort.ClosedError, raised for an
// operation on a closed database or an ended batch. Created once at import; they live as
// long as the interpreter (the module holds a reference too).
std::array<PyObject*, kStatusCount> g_errors{};
PyObject* g_error_base = nullptr;  // wort.Error

// A failed outcome on its way to Python: thrown where the GIL may not be held, turned into
// the Python exception by the translator registered at import.
struct StatusError {
  wort::Status code;
  std::string message;
};

[[noreturn]] void fail(wort::Status code, std::string message) {
  throw StatusError{code, std::move(message)};
}

[[noreturn]] void fail_op(wort::Status code, std::string_view op) {
  fail(code, std::string(op) + ": " + std::string(wort::to_string(code)));
}

void raise_status_error(const StatusError& e) {
  const auto i = static_cast<std::size_t>(e.code);
  PyObject* cls = i < kStatusCount && g_errors[i] ? g_errors[i] : g_error_base;
  py::object exc;
  try {
    exc = py::handle(cls)(py::str(e.message.data(), e.message.size()));
  } catch (py::error_already_set& err) {
    err.restore();
    return;
  }
  const std::string_view name = wort::to_string(e.code);
  exc.attr("status") = e.code == wort::Status::ok ? py::object(py::none())
                                                  : py::object(py::str(name.data(), name.size()));
  PyErr_SetObject(cls, exc.ptr());
}

// "NotAPoolError" from "not_a_pool", "IoError" from "io_error".
std::string class_name(std::string_view status) {
  if (status.ends_with("_error")) status.remove_suffix(6);
  std::string out;
  bool upper = true;
  for (char c : status) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(c - 'a' + 'A') : c;
    upper = false;
  }
  return out + "Error";
}

void make_errors(py::module_& m) {
  PyObject* base = PyErr_NewExceptionWithDoc(
      "wort.Error", "A wort operation failed; .status names the wort::Status.", nullptr, nullptr);
  if (!base) throw py::error_already_set();
  g_error_base = base;
  m.add_object("Error", py::reinterpret_borrow<py::object>(base));
  py::tuple closed_bases = py::make_tuple(py::handle(base), py::handle(PyExc_ValueError));
  PyObject* closed = PyErr_NewExceptionWithDoc(
      "wort.ClosedError", "An operation on a closed database, or on a batch whose with-block ended.",
      closed_bases.ptr(), nullptr);
  if (!closed) throw py::error_already_set();
  g_errors[0] = closed;
  m.add_object("ClosedError", py::reinterpret_borrow<py::object>(closed));
  for (std::size_t i = 1; i < kStatusCount; ++i) {
    const std::string_view status = wort::to_string(static_cast<wort::Status>(i));
    const std::string name = class_name(status);
    const std::string qualified = "wort." + name;
    const std::string doc = "wort::Status::" + std::string(status);
    PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc.c_str(), base, nullptr);
    if (!cls) throw py::error_already_set();
    g_errors[i] = cls;
    m.add_object(name.c_str(), py::reinterpret_borrow<py::object>(cls));
  }
}

// --- bytes-like arguments -----------------------------------------------------------------

// A view of a bytes-like argument, valid while this object lives (a buffer export pins a
// bytearray's storage against resizing). Built and destroyed with the GIL held.
class Bytes {
 public:
  Bytes(py::handle o, const char* what) {
    PyObject* p = o.ptr();
    if (PyBytes_Check(p)) {
      view_ = std::string_view(PyBytes_AS_STRING(p), static_cast<std::size_t>(PyBytes_GET_SIZE(p)));
      return;
    }
    if (PyUnicode_Check(p) || !PyObject_CheckBuffer(p))
      throw py::type_error(std::string(what) + " must be bytes-like (bytes, bytearray, memoryview), not " +
                           std::string(Py_TYPE(p)->tp_name));
    if (PyObject_GetBuffer(p, &buf_, PyBUF_SIMPLE) != 0) throw py::error_already_set();
    held_ = true;
    view_ = std::string_view(static_cast<const char*>(buf_.buf), static_cast<std::size_t>(buf_.len));
  }
  ~Bytes() {
    if (held_) PyBuffer_Release(&buf_);
  }
  Bytes(const Bytes&) = delete;
  Bytes& operator=(const Bytes&) = delete;
  std::string_view view() const noexcept { return view_; }

 private:
  Py_buffer buf_{};
  bool held_ = false;
  std::string_view view_;
};

py::bytes to_bytes(std::string_view s) { return py::bytes(s.data(), s.size()); }

std::optional<std::string> opt_bytes(const py::object& o, const char* what) {
  if (o.is_none()) return std::nullopt;
  Bytes b(o, what);
  return std::string(b.view());
}

// --- the database -------------------------------------------------------------------------

class Db {
 public:
  explicit Db(std::unique_ptr<wort::Store> s, std::string path)
      : store_(std::move(s)), path_(std::move(path)) {}

  // The Store, for one operation; raises wort.Error when the database is closed.
  std::shared_ptr<wort::Store> store() const {
    if (!store_) fail(wort::Status::ok, "operation on a closed wort database (" + path_ + ")");
    return store_;
  }
  bool closed() const noexcept { return !store_; }
  const std::string& path() const noexcept { return path_; }

  void close() {
    std::shared_ptr<wort::Store> s = std::move(store_);
    store_.reset();
    py::gil_scoped_release nogil;
    s.reset();  // closes the pool unless an operation in another thread still holds it
  }

 private:
  std::shared_ptr<wort::Store> store_;
  std::string path_;
};

std::shared_ptr<Db> open_db(const py::object& path, const py::object& kind, std::uint64_t size) {
  const std::string p = py::str(py::module_::import("os").attr("fspath")(path));
  wort::StoreOptions o;
  if (!kind.is_none()) o.kind = kind.cast<std::string>();
  o.size = size;
  wort::Result<std::unique_ptr<wort::Store>> r = [&] {
    py::gil_scoped_release nogil;
    return wort::Store::open(p, o);
  }();
  if (!r) fail(r.error().code, r.error().message);
  return std::make_shared<Db>(std::move(r.value()), p);
}

void db_put(const Db& db, py::handle key, py::handle value) {
  auto s = db.store();
  Bytes k(key, "key"), v(value, "value");
  wort::Status st;
  {
    py::gil_scoped_release nogil;
    st = s->put(k.view(), v.view());
  }
  if (st != wort::Status::ok) fail_op(st, "put");
}

// The value, or nullopt when absent.
std::optional<std::string> db_lookup(const Db& db, py::handle key) {
  auto s = db.store();
  Bytes k(key, "key");
  wort::Result<std::optional<std::string>> r = [&] {
    py::gil_scoped_release nogil;
    return s->get(k.view());
  }();
  if (!r) fail(r.error().code, r.error().message);
  return std::move(r.value());
}

bool db_delete(const Db& db, py::handle key) {
  auto s = db.store();
  Bytes k(key, "key");
  wort::Result<bool> r = [&] {
    py::gil_scoped_release nogil;
    return s->remove(k.view());
  }();
  if (!r) fail(r.error().code, r.error().message);
  return r.value();
}

// --- iteration ----------------------------------------------------------------------------

class Items {
 public:
  Items(std::shared_ptr<Db> db, std::optional<std::string> lo, std::optional<std::string> hi)
      : db_(std::move(db)), lo_(std::move(lo)), hi_(std::move(hi)) {}

  py::tuple next() {
    auto s = db_->store();  // a closed database raises here, before the cursor is touched
    if (!cursor_) {
      py::gil_scoped_release nogil;
      cursor_.emplace(s->cursor(lo_, hi_));
    } else if (cursor_->valid()) {
      py::gil_scoped_release nogil;
      cursor_->next();
    }
    if (!cursor_->valid()) {
      if (cursor_->status() != wort::Status::ok)
        fail_op(cursor_->status(), "items");
      throw py::stop_iteration();
    }
    return py::make_tuple(to_bytes(cursor_->key()), to_bytes(cursor_->value()));
  }

 private:
  std::shared_ptr<Db> db_;  // the Cursor below points into db_'s Store: checked open each step
  std::optional<std::string> lo_, hi_;
  std::optional<wort::Cursor> cursor_;
};

// --- batches ------------------------------------------------------------------------------

class Batch {
 public:
  explicit Batch(std::shared_ptr<Db> db) : db_(std::move(db)) {}

  void put(py::handle key, py::handle value) {
    check_open();
    Bytes k(key, "key"), v(value, "value");
    batch_.put(k.view(), v.view());
  }
  void remove(py::handle key) {
    check_open();
    Bytes k(key, "key");
    batch_.remove(k.view());
  }
  std::size_t size() const noexcept { return batch_.count(); }

  // Applies the batch when the with-block ended without an exception; else drops it.
  bool exit(const py::object& exc_type) {
    check_open();
    done_ = true;
    if (!exc_type.is_none()) return false;
    auto s = db_->store();
    wort::Status st;
    {
      py::gil_scoped_release nogil;
      st = s->write(batch_);
    }
    if (st != wort::Status::ok) fail_op(st, "batch");
    return false;
  }

 private:
  void check_open() const {
    if (done_) fail(wort::Status::ok, "this batch's with-block has ended: start a new db.batch()");
  }

  std::shared_ptr<Db> db_;
  wort::WriteBatch batch_;
  bool done_ = false;
};

}  // namespace

PYBIND11_MODULE(_wort, m) {
  m.doc() = "wort::Store, a crash-consistent persistent key-value store (see the wort package)";
  make_errors(m);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      raise_status_error(e);
    }
  });

  m.def("kinds",
        [] {
          py::list out;
          for (const std::string& k : wort::Index::kinds()) out.append(py::str(k));
          return out;
        },
        "Names of every registered index kind, sorted (open() takes any but the volatile 'art').");
  m.def("open", &open_db, py::arg("path"), py::arg("kind") = py::none(),
        py::arg("size") = std::uint64_t{64} << 20,
        "Opens the store at path, creating it (kind, size bytes) when missing, else recovering it.");
  m.attr("MAX_VALUE_SIZE") = wort::Store::kMaxValueSize;

  py::class_<Db, std::shared_ptr<Db>>(m, "Db", "An open wort store (from wort.open).")
      .def("put", &db_put, py::arg("key"), py::arg("value"),
           "Inserts or replaces; durable when it returns.")
      .def("get",
           [](const Db& db, py::handle key, py::object dflt) -> py::object {
             auto v = db_lookup(db, key);
             return v ? py::object(to_bytes(*v)) : dflt;
           },
           py::arg("key"), py::arg("default") = py::none(), "The value, or default when absent.")
      .def("delete", &db_delete, py::arg("key"), "Removes the key; True if it was there.")
      .def("__setitem__", &db_put)
      .def("__getitem__",
           [](const Db& db, py::handle key) -> py::bytes {
             auto v = db_lookup(db, key);
             if (!v) throw py::key_error(py::repr(key).cast<std::string>());
             return to_bytes(*v);
           })
      .def("__delitem__",
           [](const Db& db, py::handle key) {
             if (!db_delete(db, key)) throw py::key_error(py::repr(key).cast<std::string>());
           })
      .def("__contains__",
           [](const Db& db, py::handle key) {
             auto s = db.store();
             Bytes k(key, "key");
             py::gil_scoped_release nogil;
             return s->contains(k.view());
           })
      .def("__len__", [](const Db& db) { return db.store()->size(); })
      .def("items",
           [](std::shared_ptr<Db> db, py::object start, py::object stop) {
             db->store();
             return Items(db, opt_bytes(start, "start"), opt_bytes(stop, "stop"));
           },
           py::arg("start") = py::none(), py::arg("stop") = py::none(),
           "(key, value) pairs with start <= key < stop, ascending; either bound optional.")
      .def("batch",
           [](std::shared_ptr<Db> db) {
             db->store();
             return Batch(db);
           },
           "A batch of puts and deletes, applied all or none when its with-block ends cleanly.")
      .def("verify",
           [](const Db& db) {
             auto s = db.store();
             wort::Result<void> r = [&] {
               py::gil_scoped_release nogil;
               return s->verify();
             }();
             if (!r) fail(r.error().code, r.error().message);
           },
           "Checks the index and every value's checksum; raises wort.CorruptError on damage.")
      .def("close", &Db::close, "Closes the store (again: no effect).")
      .def_property_readonly("closed", &Db::closed)
      .def_property_readonly("path", &Db::path)
      .def_property_readonly("kind", [](const Db& db) { return std::string(db.store()->kind()); })
      .def_property_readonly("max_key_size", [](const Db& db) { return db.store()->max_key_size(); })
      .def("__enter__", [](std::shared_ptr<Db> db) { return db; })
      .def("__exit__", [](Db& db, py::args) { db.close(); })
      .def("__repr__", [](const Db& db) {
        return "<wort.Db " + db.path() + (db.closed() ? " closed>" : ">");
      });

  py::class_<Items>(m, "Items")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &Items::next);

  py::class_<Batch>(m, "Batch")
      .def("put", &Batch::put, py::arg("key"), py::arg("value"))
      .def("delete", &Batch::remove, py::arg("key"))
      .def("__len__", &Batch::size)
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__",
           [](Batch& b, py::object exc_type, py::object, py::object) { return b.exit(exc_type); });
}

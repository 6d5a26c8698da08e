// Building and validating the backend model from the specs and the schema
// registry.
//
// The checks run in a fixed order (device name, operator entries in file
// order, groups, the builtin set, custom operators, autocast) and each one
// goes on after a failure, so that one run reports every independent error.
// An entry that failed is left out of later checks, so that one mistake is
// reported once.
#include <algorithm>
#include <numeric>
#include <tuple>

#include "generator/model/backend.h"
#include "generator/spec/names.h"

namespace accgen::model {
namespace {

using schema::NativeFunction;
using schema::SchemaKind;
using schema::SchemaRegistry;

// An identifier made from an operator name: "add.Tensor" -> "add_Tensor".
std::string sanitize(std::string_view full_name) {
  std::string s(full_name);
  for (char& c : s) {
    bool ident = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                 (c >= '0' && c <= '9') || c == '_';
    if (!ident) c = '_';
  }
  return s;
}

// (name, overload) order, the one order of everything generated.
std::pair<std::string_view, std::string_view> sortKey(std::string_view full) {
  std::size_t dot = full.find('.');
  if (dot == std::string_view::npos) return {full, {}};
  return {full.substr(0, dot), full.substr(dot + 1)};
}

bool nameLess(std::string_view a, std::string_view b) {
  return sortKey(a) < sortKey(b);
}

// Note [CompositeImplicitAutograd next to other kernels]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// An entry such as matmul lists CompositeImplicitAutograd together with
// NestedTensor kernels. The schema layer calls it composite only when the
// CompositeImplicitAutograd keys are the only ones, but for PrivateUse1 the
// result is the same as for a pure composite: the decomposition is also
// registered on AutogradPrivateUse1 and runs above the backend, so a
// PrivateUse1 kernel would never be reached (torchgen likewise tests for the
// key's presence).
bool decomposesAboveBackend(const NativeFunction& fn) {
  return fn.hasCompositeImplicitAutograd() ||
         fn.kernelFor("CompositeImplicitAutograd") != nullptr;
}

// See Note [CompositeImplicitAutograd next to other kernels].
bool canHaveBackendKernel(const NativeFunction& fn) {
  return fn.canHaveBackendKernel() && !decomposesAboveBackend(fn);
}

// The at::native function that reaches an operator's DispatchStub: its CPU
// kernel (device-generic in everything but the stub it calls); "" when it
// has none.
std::string stubNative(const NativeFunction& fn) {
  for (const char* key : {"CPU", "CompositeExplicitAutograd",
                          "CompositeExplicitAutogradNonFunctional"}) {
    if (const std::string* k = fn.kernelFor(key)) return *k;
  }
  return "";
}

// Why `fn` cannot be registered as a stub through `native`, "" when it can
// (Note [Stubs of structured operators] in generator/emit/operators.cpp).
std::string stubProblem(const NativeFunction& fn, const std::string& native) {
  if (native.empty()) return "has no CPU kernel to route to the stub";
  if (!fn.structured) return "";
  if (fn.structured_inherits != "TensorIteratorBase") {
    return "is structured without a TensorIterator";
  }
  if (fn.schema.outArguments().size() != 1) {
    return "is structured with more than one out argument";
  }
  return "";
}

std::string quoteList(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) {
    if (!s.empty()) s += ", ";
    s += n;
  }
  return s;
}

}  // namespace

const std::vector<std::string>& builtinOperators() {
  static const std::vector<std::string> kBuiltins = [] {
    std::vector<std::string> v = {
#define ACCGEN_BUILTIN(name, ops, kernel) name,
#include "runtime/include/accgen/runtime/OperatorSets.def"
#undef ACCGEN_BUILTIN
    };
    std::sort(v.begin(), v.end(), nameLess);
    return v;
  }();
  return kBuiltins;
}

std::optional<Derivation> derivationOf(SchemaKind from, std::size_t from_outs,
                                       SchemaKind to, std::size_t to_outs) {
  using K = SchemaKind;
  if (from == K::kOut && to == K::kFunctional) {
    return Derivation::kFunctionalFromOut;
  }
  if (from == K::kOut && to == K::kInplace && from_outs == 1) {
    return Derivation::kInplaceFromOut;
  }
  if (from == K::kFunctional && to == K::kOut) {
    return Derivation::kOutFromFunctional;
  }
  if (from == K::kFunctional && to == K::kInplace) {
    return Derivation::kInplaceFromFunctional;
  }
  if (from == K::kInplace && to == K::kFunctional) {
    return Derivation::kFunctionalFromInplace;
  }
  if (from == K::kInplace && to == K::kOut && to_outs == 1) {
    return Derivation::kOutFromInplace;
  }
  return std::nullopt;
}

Registration registrationOf(std::shared_ptr<const NativeFunction> fn,
                            bool primary) {
  Registration r;
  r.function = std::move(fn);
  r.signature = schema::dispatcherSignature(*r.function);
  r.role = r.function->schema.kind();
  r.primary = primary;
  return r;
}

const Registration& Operator::primary() const {
  for (const auto& m : members) {
    if (m.primary) return m;
  }
  // buildBackend always marks one member primary.
  return members.front();
}

const Registration* Operator::member(std::string_view full_name) const {
  for (const auto& m : members) {
    if (m.fullName() == full_name) return &m;
  }
  return nullptr;
}

const Operator* Backend::findRegistration(std::string_view full_name) const {
  auto it = registration_index_.find(full_name);
  if (it == registration_index_.end()) return nullptr;
  return &operators_[it->second];
}

const CustomOperator* Backend::findCustom(std::string_view full_name) const {
  std::string prefix = spec_.cpp_namespace + "::";
  if (full_name.starts_with(prefix)) full_name.remove_prefix(prefix.size());
  for (const auto& c : custom_) {
    if (c.full_name == full_name) return &c;
  }
  return nullptr;
}

class BackendBuilder {
 public:
  BackendBuilder(const spec::Specs& specs, const SchemaRegistry& registry,
                 DiagnosticEngine& diags, const BuildOptions& options)
      : specs_(specs), registry_(registry), diags_(diags), options_(options) {}

  std::optional<Backend> build() {
    int errors_before = diags_.errorCount();
    backend_.spec_ = specs_.backend;
    backend_.spec_dir_ = specs_.dir;
    backend_.autocast_dtype_ = specs_.autocast.dtype;

    checkDeviceName();
    resolveOperators();
    expandGroups();
    checkBuiltinSet();
    resolveCustomOperators();
    resolveAutocast();
    if (diags_.errorCount() > errors_before) return std::nullopt;
    assignNames();
    if (diags_.errorCount() > errors_before) return std::nullopt;
    return std::move(backend_);
  }

 private:
  // One resolved entry of operators.yaml, in file order.
  struct Resolved {
    const spec::OperatorEntry* entry;
    Operator op;
  };

  void error(SourceLoc loc, std::string message,
             std::vector<std::string> notes = {}) {
    diags_.error(std::move(loc), std::move(message), std::move(notes));
  }

  std::shared_ptr<const NativeFunction> share(const NativeFunction& fn) {
    return registry_.shared(fn);
  }

  // Maps a schema through `map` (a dispatcher signature or a whole
  // registration); an error at `loc` when the schema layer cannot map a type
  // (a bug or a new type in a newer torch).
  template <typename Map>
  auto mapped(const schema::FunctionSchema& s, const SourceLoc& loc, Map map)
      -> std::optional<decltype(map())> {
    try {
      return map();
    } catch (const schema::SchemaParseError& e) {
      error(loc, "cannot map '" + s.fullName() +
                     "' to a C++ signature: " + e.detail());
      return std::nullopt;
    }
  }

  std::optional<Registration> registration(const NativeFunction& fn,
                                           bool primary, const SourceLoc& loc) {
    return mapped(fn.schema, loc,
                  [&] { return registrationOf(share(fn), primary); });
  }

  // Full names of every overload of the base name `name`, sorted.
  std::vector<std::string> overloadsOf(std::string_view name) {
    if (overloads_.empty()) {
      for (const auto& fn : registry_.functions()) {
        overloads_[fn.schema.name].push_back(fn.schema.fullName());
      }
      for (auto& [_, v] : overloads_)
        std::sort(v.begin(), v.end(), nameLess);
    }
    auto it = overloads_.find(std::string(name));
    if (it == overloads_.end()) return {};
    return it->second;
  }

  // "unknown operator" with the nearest name, or the overloads when `op` is
  // a bare name whose overload-less form does not exist.
  void reportUnknown(std::string_view op, const SourceLoc& loc,
                     std::string_view where) {
    std::vector<std::string> notes;
    if (op.find('.') == std::string_view::npos) {
      auto overloads = overloadsOf(op);
      if (!overloads.empty()) {
        error(loc,
              "ambiguous operator '" + std::string(op) + "'" +
                  std::string(where) + ": '" + std::string(op) +
                  "' has no overload without a name",
              {"its overloads: " + quoteList(overloads),
               "name one of them, e.g. '" + overloads.front() + "'"});
        return;
      }
    }
    for (const auto& c : specs_.operators.custom) {
      if (c.schema.starts_with(std::string(op) + "(") ||
          c.schema.starts_with(std::string(op) + " (")) {
        notes.push_back("'" + std::string(op) +
                        "' is a custom operator; custom operators are not "
                        "listed here");
      }
    }
    std::string message =
        "unknown operator '" + std::string(op) + "'" + std::string(where);
    std::string near = registry_.nearest(op);
    if (!near.empty()) message += "; did you mean '" + near + "'?";
    error(loc, message, std::move(notes));
  }

  void checkDeviceName() {
    const std::string& device = specs_.backend.device;
    for (const auto& fn : registry_.functions()) {
      bool is_function = fn.variants.empty() ||
                         std::find(fn.variants.begin(), fn.variants.end(),
                                   "function") != fn.variants.end();
      if (is_function && fn.schema.name == device) {
        error(specs_.backend.device_loc,
              "invalid device name '" + device + "': torch." + device +
                  " is an operator and the device module is registered as "
                  "torch.<device>",
              {"a device name is a lower-case Python identifier without "
               "digits, e.g. 'accel' or 'my_npu'"});
        return;
      }
    }
  }

  bool isBuiltin(std::string_view name) const {
    const auto& b = builtinOperators();
    return std::find(b.begin(), b.end(), name) != b.end();
  }

  // Whether `fn` may be registered with `entry.kind`; reports why not.
  bool checkKind(const spec::OperatorEntry& entry, const NativeFunction& fn) {
    const spec::KindTraits& traits = spec::kindTraits(entry.kind);
    std::string kind(traits.name);
    const std::string& op = entry.op;
    if (traits.builtin_set) {
      if (isBuiltin(op)) return true;
      error(entry.kind_loc, "operator '" + op + "' cannot be builtin",
            {"builtin is the generated allocation, copy and view set: " +
                 quoteList(builtinOperators()),
             "register '" + op + "' as kernel, emulate, stub or fallback"});
      return false;
    }
    if (isBuiltin(op)) {
      builtin_misdeclared_.insert(op);
      error(entry.kind_loc,
            "operator '" + op + "' must be builtin, not " + kind,
            {"the backend generates it from the driver API; the other kinds "
             "need it to allocate and copy"});
      return false;
    }
    if (decomposesAboveBackend(fn)) {
      error(entry.kind_loc,
            "operator '" + op + "' cannot be " + kind +
                ": it is CompositeImplicitAutograd",
            {"it decomposes into other operators; register those instead"});
      return false;
    }
    if (!fn.canHaveBackendKernel()) {
      error(entry.kind_loc, "operator '" + op + "' cannot be " + kind +
                                ": PyTorch registers its kernels by hand "
                                "(manual_kernel_registration)");
      return false;
    }
    // The runtime emulates the hook operators without their CPU kernels.
    if (traits.needs_cpu_kernel && !registry_.hasCpuKernel(fn) &&
        hookFunction(fn.schema.fullName()) == nullptr) {
      error(
          entry.kind_loc,
          "operator '" + op + "' cannot be " + kind + ": it has no CPU kernel",
          {kind + " runs the operator's CPU kernel " +
           std::string(traits.cpu_runs) + "; use kind kernel instead"});
      return false;
    }
    if (traits.takes_stub) {
      if (!checkStub(entry, stubName(entry, fn))) return false;
      if (std::string why = stubProblem(fn, stubNative(fn)); !why.empty()) {
        error(entry.kind_loc,
              "operator '" + op + "' cannot be registered as a stub: it " + why,
              {"list the out= operator whose CPU kernel calls the stub "
               "(abs.out, sin.out), or use kind emulate"});
        return false;
      }
    }
    return true;
  }

  static std::string stubName(const spec::OperatorEntry& entry,
                              const NativeFunction& fn) {
    return entry.stub.value_or(fn.schema.baseName() + "_stub");
  }

  bool checkStub(const spec::OperatorEntry& entry, const std::string& stub) {
    const schema::DispatchStubs* known = knownStubs(entry);
    if (!known || known->count(stub)) return true;
    std::string message = "unknown DispatchStub '" + stub + "'";
    std::vector<std::string> notes = {
        "stubs are the DECLARE_DISPATCH names in the installed torch's "
        "ATen/native headers"};
    if (entry.stub) {
      std::vector<std::string> candidates;
      for (const auto& [name, header] : *known)
        candidates.push_back(name);
      std::string near = nearestName(stub, candidates);
      if (!near.empty()) message += "; did you mean '" + near + "'?";
    } else {
      // The name was derived, not typed: a spelling suggestion would be a
      // guess, the stubs named after the operator are not.
      message += " (the default for '" + entry.op + "')";
      std::string prefix = stub.substr(0, stub.size() - 4);
      std::vector<std::string> related;
      for (const auto& [k, header] : *known) {
        if (k.starts_with(prefix)) related.push_back(k);
      }
      if (!related.empty()) {
        notes.push_back("stubs named after it: " + quoteList(related));
      }
      notes.push_back(
          "name the stub with 'stub:', or use another kind if "
          "its CPU kernel calls no DispatchStub");
    }
    error(entry.stub ? entry.stub_loc : entry.kind_loc, message,
          std::move(notes));
    return false;
  }

  const schema::DispatchStubs* knownStubs(const spec::OperatorEntry& entry) {
    if (options_.dispatch_stubs) return &*options_.dispatch_stubs;
    if (!options_.torch_include_dir.empty()) {
      if (!scanned_stubs_) {
        scanned_stubs_ = schema::findDispatchStubs(options_.torch_include_dir);
      }
      return &*scanned_stubs_;
    }
    if (!warned_unchecked_stubs_) {
      warned_unchecked_stubs_ = true;
      diags_.warning(entry.loc,
                     "DispatchStub names are not checked: no torch include "
                     "directory was given");
    }
    return nullptr;
  }

  void resolveOperators() {
    for (const auto& entry : specs_.operators.operators) {
      const NativeFunction* fn = registry_.find(entry.op);
      if (!fn) {
        reportUnknown(entry.op, entry.op_loc, "");
        continue;
      }
      if (!checkKind(entry, *fn)) continue;
      auto primary = registration(*fn, /*primary=*/true, entry.op_loc);
      if (!primary) continue;
      Operator op;
      op.full_name = entry.op;
      op.name = entry.name;
      op.overload = entry.overload;
      op.kind = entry.kind;
      op.group = entry.group;
      if (spec::kindTraits(entry.kind).takes_stub) {
        op.stub = stubName(entry, *fn);
        op.stub_native = stubNative(*fn);
        if (const schema::DispatchStubs* known = knownStubs(entry)) {
          auto it = known->find(op.stub);
          if (it != known->end()) op.stub_header = it->second;
        }
      }
      op.loc = entry.loc;
      op.dtypes = entry.dtypes.empty() ? specs_.backend.dtypes : entry.dtypes;
      for (const std::string& dtype : entry.dtypes) {
        const auto& all = specs_.backend.dtypes;
        if (std::find(all.begin(), all.end(), dtype) == all.end()) {
          error(entry.dtypes_loc,
                "dtype '" + dtype + "' of " + entry.op +
                    " is not one of the backend's dtypes",
                {"an operator's dtypes are a subset of `dtypes:` in "
                 "backend.yaml"});
        }
      }
      op.members.push_back(std::move(*primary));
      explicit_.emplace(entry.op, resolved_.size());
      resolved_.push_back(Resolved{&entry, std::move(op)});
    }
  }

  // The siblings a grouped operator would register besides itself: its
  // functional / in-place / out variants that accept a backend kernel (and,
  // for emulate and fallback, have a CPU kernel to run).
  std::vector<const NativeFunction*> groupSiblings(const Operator& op) {
    std::vector<const NativeFunction*> result;
    if (!op.group) return result;
    SchemaRegistry::Group g = registry_.group(*op.members.front().function);
    const bool needs_cpu = spec::kindTraits(op.kind).needs_cpu_kernel;
    for (const NativeFunction* sib : {g.functional, g.inplace, g.out}) {
      if (!sib || sib->schema.fullName() == op.full_name) continue;
      if (!canHaveBackendKernel(*sib)) continue;
      if (needs_cpu && !registry_.hasCpuKernel(*sib)) continue;
      result.push_back(sib);
    }
    return result;
  }

  // Adds the group siblings to each grouped operator. A sibling listed on its
  // own keeps its own entry when the kinds agree and is an error when they
  // do not; a sibling two groups claim is an error. Entries in such a clash
  // are left out of the expansion so that one clash is one error.
  void expandGroups() {
    std::vector<std::vector<const NativeFunction*>> siblings;
    for (const auto& r : resolved_)
      siblings.push_back(groupSiblings(r.op));

    std::set<std::size_t> clashing;
    std::set<std::pair<std::size_t, std::size_t>> reported;
    for (std::size_t i = 0; i < resolved_.size(); ++i) {
      for (const NativeFunction* sib : siblings[i]) {
        auto it = explicit_.find(sib->schema.fullName());
        if (it == explicit_.end()) continue;
        std::size_t j = it->second;
        if (resolved_[j].op.kind == resolved_[i].op.kind) continue;
        clashing.insert(i);
        clashing.insert(j);
        if (reported.insert(std::minmax(i, j)).second) {
          reportGroupClash(i, j, siblings);
        }
      }
    }

    std::map<std::string, std::size_t> claimed;
    for (std::size_t i = 0; i < resolved_.size(); ++i) {
      if (clashing.count(i)) continue;
      Resolved& owner = resolved_[i];
      for (const NativeFunction* sib : siblings[i]) {
        std::string name = sib->schema.fullName();
        // Listed on its own with the same kind: the explicit entry wins.
        if (explicit_.count(name)) continue;
        if (auto it = claimed.find(name); it != claimed.end()) {
          const Resolved& first = resolved_[it->second];
          error(owner.entry->op_loc,
                "operator '" + name + "' is in the groups of both '" +
                    first.op.full_name + "' and '" + owner.op.full_name + "'",
                {"'" + first.op.full_name + "' is listed at " +
                     first.entry->loc.str(),
                 "set 'group: false' on one of them"});
          continue;
        }
        auto member =
            registration(*sib, /*primary=*/false, owner.entry->op_loc);
        if (!member || !derive(owner, *member)) continue;
        claimed.emplace(name, i);
        owner.op.members.push_back(std::move(*member));
      }
    }
  }

  // Sets how `member`'s wrapper reaches the user's kernel when the owner's
  // kind has one; an error when no wrapper can (Note [One kernel for a
  // group] in generator/emit/operators_kernels.cpp).
  bool derive(const Resolved& owner, Registration& member) {
    if (!spec::kindTraits(owner.op.kind).user_kernel) return true;
    const Registration& p = owner.op.members.front();
    auto how = derivationOf(p.role, p.schema().outArguments().size(),
                            member.role, member.schema().outArguments().size());
    if (!how) {
      error(owner.entry->op_loc,
            "cannot derive '" + member.fullName() + "' from the kernel of '" +
                p.fullName() + "'",
            {"'" + p.fullName() + "' is " +
                 std::string(schema::kindName(p.role)) + " and '" +
                 member.fullName() + "' is " +
                 std::string(schema::kindName(member.role)),
             "give '" + owner.op.full_name +
                 "' group: false and list the forms you need"});
      return false;
    }
    member.derivation = *how;
    return true;
  }

  // Entry i's group covers entry j, which is listed with another kind. The
  // error goes to whichever of the two comes later in the file.
  void reportGroupClash(
      std::size_t i, std::size_t j,
      const std::vector<std::vector<const NativeFunction*>>& siblings) {
    const Resolved& owner = resolved_[i];
    const Resolved& listed = resolved_[j];
    auto covers = [&](std::size_t a, std::size_t b) {
      for (const NativeFunction* s : siblings[a]) {
        if (s->schema.fullName() == resolved_[b].op.full_name) return true;
      }
      return false;
    };
    std::vector<std::string> members;
    for (const NativeFunction* s : siblings[i]) {
      members.push_back(s->schema.fullName());
    }
    std::string owner_kind(spec::kindName(owner.op.kind));
    std::string listed_kind(spec::kindName(listed.op.kind));
    bool listed_is_later = listed.entry->loc.line > owner.entry->loc.line ||
                           (listed.entry->loc.line == owner.entry->loc.line &&
                            listed.entry->loc.column > owner.entry->loc.column);
    const Resolved& later = listed_is_later ? listed : owner;
    const Resolved& earlier = listed_is_later ? owner : listed;
    std::string fix =
        covers(j, i)
            ? "list each operator once, or give both entries group: false"
            : "list each operator once, or give '" + owner.op.full_name +
                  "' group: false";
    error(later.entry->op_loc,
          "operator '" + listed.op.full_name + "' is listed as " + listed_kind +
              ", but the group of '" + owner.op.full_name +
              "' registers it as " + owner_kind,
          {"'" + earlier.op.full_name + "' is listed at " +
               earlier.entry->loc.str(),
           "the group of '" + owner.op.full_name + "' (" + owner_kind +
               ") registers " + quoteList(members),
           fix});
  }

  void checkBuiltinSet() {
    std::vector<std::string> missing;
    for (const auto& name : builtinOperators()) {
      // Builtins this torch does not have are not required of it.
      if (!registry_.find(name)) continue;
      if (builtin_misdeclared_.count(name)) continue;
      auto it = explicit_.find(name);
      if (it != explicit_.end() &&
          spec::kindTraits(resolved_[it->second].op.kind).builtin_set) {
        continue;
      }
      // An entry that failed for another reason was reported already.
      bool listed = std::any_of(
          specs_.operators.operators.begin(), specs_.operators.operators.end(),
          [&](const spec::OperatorEntry& e) { return e.op == name; });
      if (!listed) missing.push_back(name);
    }
    if (missing.empty()) return;
    SourceLoc at = specs_.operators.operators_loc.file.empty()
                       ? specs_.operators.loc
                       : specs_.operators.operators_loc;
    error(
        at,
        "the builtin operator set is incomplete: missing " + quoteList(missing),
        {"a backend cannot allocate, copy or view tensors without them",
         "add each as: - {op: " + missing.front() + ", kind: builtin}"});
  }

  void resolveCustomOperators() {
    const std::string& ns = specs_.backend.cpp_namespace;
    std::map<std::string, SourceLoc> seen;
    for (const auto& entry : specs_.operators.custom) {
      schema::FunctionSchema parsed;
      try {
        parsed = schema::parseFunctionSchema(entry.schema);
      } catch (const schema::SchemaParseError& e) {
        SourceLoc at = entry.schema_loc;
        at.column += static_cast<int>(e.column());
        error(at, "invalid operator schema: " + e.detail(),
              {entry.schema, std::string(e.column(), ' ') + "^"});
        continue;
      }
      std::string full = parsed.fullName();
      if (auto [it, inserted] = seen.emplace(full, entry.schema_loc);
          !inserted) {
        error(entry.schema_loc, "duplicate custom operator '" + full + "'",
              {"first defined at " + it->second.str()});
        continue;
      }
      if (registry_.find(full)) {
        error(entry.schema_loc,
              "custom operator '" + full +
                  "' has the name of an aten "
                  "operator",
              {"operators are named without their namespace in specs and "
               "in `accgen inspect`; give " +
               ns + "::" + full + " another name"});
        continue;
      }
      bool has_tensor = std::any_of(
          parsed.arguments.begin(), parsed.arguments.end(),
          [](const schema::Argument& a) { return a.type.isTensorLike(); });
      if (!has_tensor) {
        error(entry.schema_loc,
              "custom operator '" + full + "' has no Tensor argument",
              {"the dispatcher picks the device kernel from the Tensor "
               "arguments"});
        continue;
      }
      if (entry.autograd) {
        // The generated autograd::Function returns its results as Tensors
        // (a variable_list for several).
        bool functional = parsed.kind() == SchemaKind::kFunctional;
        auto isPlainTensor = [](const schema::Return& r) {
          return r.type.isTensor() && !r.type.optional;
        };
        bool tensor_out = std::any_of(parsed.returns.begin(),
                                      parsed.returns.end(), isPlainTensor);
        bool only_tensors = std::all_of(parsed.returns.begin(),
                                        parsed.returns.end(), isPlainTensor);
        if (!functional || !tensor_out || !only_tensors) {
          error(entry.loc,
                "custom operator '" + full + "' cannot have autograd: " +
                    (!functional   ? "it writes to its arguments"
                     : !tensor_out ? "it returns no Tensor"
                                   : "it returns a value that is not a Tensor"),
                {"autograd: true needs a functional schema returning "
                 "Tensors"});
          continue;
        }
      }
      auto shared =
          std::make_shared<const schema::FunctionSchema>(std::move(parsed));
      // A schema of no native_functions.yaml entry: no entry options.
      auto sig = mapped(*shared, entry.schema_loc, [&] {
        return schema::dispatcherSignature(*shared, {});
      });
      if (!sig) continue;
      CustomOperator c;
      c.schema = shared;
      c.signature = std::move(*sig);
      c.full_name = full;
      c.ns = ns;
      c.qualified_name = ns + "::" + full;
      c.meta = entry.meta;
      c.autograd = entry.autograd;
      c.reference = entry.reference;
      c.loc = entry.loc;
      backend_.custom_.push_back(std::move(c));
    }
    std::sort(backend_.custom_.begin(), backend_.custom_.end(),
              [](const CustomOperator& a, const CustomOperator& b) {
                return nameLess(a.full_name, b.full_name);
              });
  }

  void resolveAutocast() {
    const spec::AutocastSpec& ac = specs_.autocast;
    std::vector<AutocastRule> rules;
    for (const auto& entry : ac.entries) {
      const NativeFunction* fn = registry_.find(entry.op);
      if (!fn) {
        reportUnknown(entry.op, entry.loc, " in autocast.yaml");
        continue;
      }
      if (entry.policy == spec::CastPolicy::kFp32SetOptDtype &&
          !hasOptionalDtype(fn->schema)) {
        error(entry.loc,
              "operator '" + entry.op +
                  "' cannot be fp32_set_opt_dtype: it "
                  "has no 'ScalarType? dtype' argument",
              {"fp32_set_opt_dtype sets that argument to float32; use fp32 "
               "for other operators"});
        continue;
      }
      const NativeFunction* dtype_overload = nullptr;
      if (entry.policy == spec::CastPolicy::kFp32AppendDtype) {
        dtype_overload = findDtypeOverload(*fn);
        if (dtype_overload == nullptr) {
          error(entry.loc,
                "operator '" + entry.op +
                    "' cannot be fp32_append_dtype: no overload of '" +
                    fn->schema.name +
                    "' takes its arguments and a trailing 'ScalarType dtype'",
                {"fp32_append_dtype calls that overload with float32 "
                 "(norm.Scalar calls norm.ScalarOpt_dtype); use fp32 for "
                 "other operators"});
          continue;
        }
      }
      AutocastRule rule;
      rule.full_name = entry.op;
      rule.policy = entry.policy;
      rule.message = entry.message;
      rule.function = share(*fn);
      if (dtype_overload != nullptr)
        rule.dtype_overload = share(*dtype_overload);
      // The signature points into the shared copy, not the registry.
      auto sig = mapped(rule.function->schema, entry.loc, [&] {
        return schema::dispatcherSignature(*rule.function);
      });
      if (!sig) continue;
      rule.signature = std::move(*sig);
      rule.loc = entry.loc;
      rules.push_back(std::move(rule));
    }
    if (!rules.empty() && !specs_.backend.features.autocast) {
      diags_.warning(ac.loc,
                     "autocast.yaml has rules but features.autocast is "
                     "false in backend.yaml; no autocast code is generated");
      return;
    }
    std::sort(rules.begin(), rules.end(),
              [](const AutocastRule& a, const AutocastRule& b) {
                return nameLess(a.full_name, b.full_name);
              });
    backend_.autocast_ = std::move(rules);
  }

  // The overload of fn's operator whose arguments are fn's (by name, each
  // of the same type or its optional) followed by `ScalarType dtype`, with
  // the same returns: what fp32_append_dtype redispatches to.
  const NativeFunction* findDtypeOverload(const NativeFunction& fn) const {
    const schema::FunctionSchema& s = fn.schema;
    // The result type follows the first argument, a tensor.
    if (s.arguments.empty() || !s.arguments.front().type.isTensor()) {
      return nullptr;
    }
    auto accepts = [](const schema::Type& to, const schema::Type& from) {
      schema::Type widened = from.withoutAnnotation();
      if (to.withoutAnnotation() == widened) return true;
      widened.optional = true;
      return to.withoutAnnotation() == widened;
    };
    for (const NativeFunction& candidate : registry_.functions()) {
      const schema::FunctionSchema& c = candidate.schema;
      if (c.name != s.name || c.arguments.size() != s.arguments.size() + 1 ||
          c.returns != s.returns) {
        continue;
      }
      const schema::Argument& last = c.arguments.back();
      if (last.name != "dtype" || last.type.base != "ScalarType" ||
          last.type.optional || last.type.is_list) {
        continue;
      }
      bool same = true;
      for (std::size_t i = 0; same && i < s.arguments.size(); ++i) {
        same = c.arguments[i].name == s.arguments[i].name &&
               accepts(c.arguments[i].type, s.arguments[i].type);
      }
      if (same) return &candidate;
    }
    return nullptr;
  }

  static bool hasOptionalDtype(const schema::FunctionSchema& s) {
    return std::any_of(
        s.arguments.begin(), s.arguments.end(), [](const schema::Argument& a) {
          return a.name == "dtype" && a.type.base == "ScalarType" &&
                 a.type.optional && !a.type.is_list;
        });
  }

  // Sorts everything and names wrappers and user kernels. Wrapper names are
  // made unique with a numeric suffix (they are internal); user kernel names
  // and files must be unique as they are, since the user writes them.
  void assignNames() {
    // Sorted through their indices: an Operator is costly to move.
    std::vector<std::size_t> order(resolved_.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      const Operator& x = resolved_[a].op;
      const Operator& y = resolved_[b].op;
      return std::tie(x.name, x.overload) < std::tie(y.name, y.overload);
    });
    std::vector<Operator> ops;
    ops.reserve(order.size());
    for (std::size_t i : order)
      ops.push_back(std::move(resolved_[i].op));
    std::set<std::string> wrappers;
    auto uniqueWrapper = [&](std::string_view full) {
      std::string base = "wrapper_" + sanitize(full);
      std::string name = base;
      for (int n = 2; !wrappers.insert(name).second; ++n) {
        name = base + "_" + std::to_string(n);
      }
      return name;
    };
    std::map<std::string, std::string> kernel_owner;
    auto claimKernel = [&](const std::string& file, const std::string& who,
                           const SourceLoc& loc) {
      auto [it, inserted] = kernel_owner.emplace(file, who);
      if (!inserted) {
        error(loc,
              "'" + who + "' and '" + it->second +
                  "' would share the user kernel file " + file,
              {"rename the custom operator"});
      }
    };
    for (auto& op : ops) {
      std::sort(op.members.begin(), op.members.end(),
                [](const Registration& a, const Registration& b) {
                  return nameLess(a.fullName(), b.fullName());
                });
      for (auto& m : op.members)
        m.wrapper_name = uniqueWrapper(m.fullName());
      if (spec::kindTraits(op.kind).user_kernel) {
        op.kernel_name = "kernel_" + sanitize(op.full_name);
        op.kernel_file = "kernels/" + sanitize(op.full_name) + ".cpp";
        claimKernel(op.kernel_file, op.full_name, op.loc);
      }
    }
    for (auto& c : backend_.custom_) {
      std::string id = sanitize(c.full_name);
      c.wrapper_name = uniqueWrapper(c.full_name);
      c.kernel_name = "kernel_" + id;
      c.meta_name = c.meta ? "meta_" + id : "";
      c.backward_name = c.autograd ? "backward_" + id : "";
      c.kernel_file = "kernels/" + id + ".cpp";
      claimKernel(c.kernel_file, c.qualified_name, c.loc);
    }
    for (std::size_t i = 0; i < ops.size(); ++i) {
      for (const auto& m : ops[i].members) {
        backend_.registration_index_.emplace(m.fullName(), i);
      }
    }
    backend_.operators_ = std::move(ops);
  }

  const spec::Specs& specs_;
  const SchemaRegistry& registry_;
  DiagnosticEngine& diags_;
  const BuildOptions& options_;
  Backend backend_;

  std::vector<Resolved> resolved_;
  // Listed operators that resolved, to their index in resolved_.
  std::map<std::string, std::size_t, std::less<>> explicit_;
  std::set<std::string> builtin_misdeclared_;
  std::map<std::string, std::vector<std::string>> overloads_;
  std::optional<schema::DispatchStubs> scanned_stubs_;
  bool warned_unchecked_stubs_ = false;
};

std::optional<Backend> buildBackend(const spec::Specs& specs,
                                    const schema::SchemaRegistry& registry,
                                    DiagnosticEngine& diags,
                                    const BuildOptions& options) {
  return BackendBuilder(specs, registry, diags, options).build();
}

const std::vector<HookOperator>& hookOperators() {
  // Note [The runtime's operator sets]: the runtime checks, when it
  // compiles, that each function exists with its operator's signature.
  static const std::vector<HookOperator> kHooks = [] {
    std::vector<HookOperator> hooks = {
#define ACCGEN_HOOK(name, ops, function) \
  {name, "::accgen::runtime::hooks::" #function},
#include "runtime/include/accgen/runtime/OperatorSets.def"
#undef ACCGEN_HOOK
    };
    std::sort(hooks.begin(), hooks.end(),
              [](const HookOperator& a, const HookOperator& b) {
                return std::string_view(a.name) < std::string_view(b.name);
              });
    return hooks;
  }();
  return kHooks;
}

const std::vector<ShadowedOperator>& shadowedOperators() {
  static const std::vector<ShadowedOperator> kShadowed = {
#define ACCGEN_SHADOWED(name, ops) {name, #ops},
#include "runtime/include/accgen/runtime/OperatorSets.def"
#undef ACCGEN_SHADOWED
  };
  return kShadowed;
}

const char* hookFunction(const std::string& full_name) {
  for (const HookOperator& hook : hookOperators()) {
    if (full_name == hook.name) return hook.function;
  }
  return nullptr;
}

}  // namespace accgen::model

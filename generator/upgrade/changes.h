// The vocabulary of schema changes between two PyTorch releases, and the
// classifier that explains how one operator's schema changed.
//
// Both the schema lock (lock.h) and `accgen schema-diff` (schema_diff.h) ask
// the same questions of an old and a new schema: what kind of change is it,
// does it need anyone's attention, and does a user-written kernel have to be
// edited. They answer them here, once, so that `generate` refusing a drifted
// lock and `schema-diff` reporting it can never disagree.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "generator/schema/schema.h"

namespace accgen::upgrade {

/// One class of difference between an old and a new native_functions.yaml
/// (docs/upgrading.md, "Change classes").
enum class ChangeClass {
  kRemovedOperator,            ///< the entry is gone from the new file
  kAddedOperator,              ///< a new operator name
  kAddedOverload,              ///< a new overload of an existing name
  kRenamedArgument,            ///< same position and type, new name
  kReorderedArguments,         ///< the same arguments in another order
  kKeywordOnlyChange,          ///< an argument moved across `*`
  kTypeChange,                 ///< an argument's type (annotation aside)
  kNewArgumentWithDefault,     ///< callers need not change
  kNewArgumentWithoutDefault,  ///< every caller must pass it
  kRemovedArgument,
  kReturnChange,           ///< count, types or names of the returns
  kAliasAnnotationChange,  ///< `Tensor(a!)`, `Tensor(a)` on args/returns
  kTagChange,              ///< `tags:` of the entry
  kDefaultChange,          ///< only a default value differs
};

/// "removed-operator", "renamed-argument", ...: the spelling in reports and
/// in `--json`.
std::string_view changeClassName(ChangeClass cls);

/// False for the classes that need nobody's attention: added operators and
/// overloads, tag changes and default-only changes (a backend kernel never
/// sees a default: the dispatcher passes every argument explicitly).
bool classNeedsAction(ChangeClass cls);

/// One classified difference with a human-readable detail, e.g.
/// {kTypeChange, "argument 'alpha': Scalar -> float"}.
struct Change {
  ChangeClass cls;
  std::string detail;

  bool operator==(const Change&) const = default;
};

/// Every difference between two schemas of the same operator, in a stable
/// order (arguments in new-schema order, then returns). Empty when the two
/// are the same up to spelling. Tags are not part of a schema; see
/// diffTags().
std::vector<Change> diffSchema(const schema::FunctionSchema& old_schema,
                               const schema::FunctionSchema& new_schema);

/// The tag difference of two entries as one kTagChange ("+pointwise,
/// -core"), or nothing when the tag sets are equal.
std::vector<Change> diffTags(const std::vector<std::string>& old_tags,
                             const std::vector<std::string>& new_tags);

/// True when any change needs action (classNeedsAction).
bool needsAction(const std::vector<Change>& changes);

/// True when a user-written kernel implementing `old_sig` has to be edited
/// to implement `new_sig`: the C++ return or parameter types differ, the
/// arguments were reordered (same-typed arguments swapping places compile
/// and compute nonsense), or an alias annotation changed (the kernel must
/// now write, or return a view of, a different argument). Renamed
/// arguments alone need no edit: C++ parameter names are the kernel's own.
bool needsKernelEdit(const schema::CppSignature& old_sig,
                     const schema::CppSignature& new_sig,
                     const std::vector<Change>& changes);

}  // namespace accgen::upgrade

// Classifying the difference between two schemas of one operator.
//
// Note [Matching arguments across releases]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Arguments are matched by name first. Among the ones left over, an old and
// a new argument at the same position with the same type are one argument
// renamed (`_cdist_backward(Tensor grad, ...)` became `(Tensor grad_output,
// ...)` in 2.14); failing that, when as many old as new arguments are left
// and their types agree pairwise in order, they are renamed too. Everything
// else left over is a removed or a new argument. Matching by type alone
// would be a guess: a new `Tensor? bias=None` next to a removed `Tensor?
// weight` is more likely two changes than a rename, unless it sits exactly
// where the old one was.
#include "generator/upgrade/changes.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace accgen::upgrade {
namespace {

using schema::Argument;
using schema::FunctionSchema;
using schema::Return;
using schema::Type;

std::string singleQuoted(std::string_view s) {
  return "'" + std::string(s) + "'";
}

std::string annotationText(const Type& t) {
  return t.annotation ? "(" + t.annotation->str() + ")" : "(none)";
}

std::string returnsText(const std::vector<Return>& returns) {
  if (returns.size() == 1) return returns[0].str();
  std::string s = "(";
  for (std::size_t i = 0; i < returns.size(); ++i) {
    if (i) s += ", ";
    s += returns[i].str();
  }
  return s + ")";
}

struct ArgPair {
  std::size_t old_index;
  std::size_t new_index;
  bool renamed;
};

std::vector<ArgPair> matchArguments(const std::vector<Argument>& old_args,
                                    const std::vector<Argument>& new_args,
                                    std::vector<std::size_t>& removed,
                                    std::vector<std::size_t>& added) {
  std::vector<ArgPair> pairs;
  std::map<std::string, std::size_t> new_by_name;
  for (std::size_t j = 0; j < new_args.size(); ++j) {
    new_by_name[new_args[j].name] = j;
  }
  std::vector<bool> new_used(new_args.size(), false);
  std::vector<std::size_t> old_left;
  for (std::size_t i = 0; i < old_args.size(); ++i) {
    auto it = new_by_name.find(old_args[i].name);
    if (it != new_by_name.end()) {
      pairs.push_back({i, it->second, false});
      new_used[it->second] = true;
    } else {
      old_left.push_back(i);
    }
  }
  auto sameType = [&](std::size_t i, std::size_t j) {
    return old_args[i].type.withoutAnnotation() ==
           new_args[j].type.withoutAnnotation();
  };
  // See Note [Matching arguments across releases]: same position first.
  std::vector<std::size_t> still_left;
  for (std::size_t i : old_left) {
    if (i < new_args.size() && !new_used[i] && sameType(i, i)) {
      pairs.push_back({i, i, true});
      new_used[i] = true;
    } else {
      still_left.push_back(i);
    }
  }
  std::vector<std::size_t> new_left;
  for (std::size_t j = 0; j < new_args.size(); ++j) {
    if (!new_used[j]) new_left.push_back(j);
  }
  bool pairwise = !still_left.empty() && still_left.size() == new_left.size();
  for (std::size_t k = 0; pairwise && k < still_left.size(); ++k) {
    pairwise = sameType(still_left[k], new_left[k]);
  }
  if (pairwise) {
    for (std::size_t k = 0; k < still_left.size(); ++k) {
      pairs.push_back({still_left[k], new_left[k], true});
    }
    still_left.clear();
    new_left.clear();
  }
  removed = still_left;
  added = new_left;
  std::sort(pairs.begin(), pairs.end(), [](const ArgPair& a, const ArgPair& b) {
    return a.new_index < b.new_index;
  });
  return pairs;
}

void diffArguments(const FunctionSchema& o, const FunctionSchema& n,
                   std::vector<Change>& out) {
  std::vector<std::size_t> removed, added;
  auto pairs = matchArguments(o.arguments, n.arguments, removed, added);

  for (std::size_t i : removed) {
    const Argument& a = o.arguments[i];
    out.push_back(
        {ChangeClass::kRemovedArgument, "argument " + singleQuoted(a.name) +
                                            " (" + a.str() + ") was removed"});
  }
  for (const ArgPair& p : pairs) {
    if (!p.renamed) continue;
    out.push_back({ChangeClass::kRenamedArgument,
                   "argument #" + std::to_string(p.new_index + 1) + " " +
                       singleQuoted(o.arguments[p.old_index].name) +
                       " is now " +
                       singleQuoted(n.arguments[p.new_index].name)});
  }

  // Reordering: the matched arguments, read in new order, must still come
  // in old order.
  bool reordered = false;
  for (std::size_t k = 1; k < pairs.size(); ++k) {
    if (pairs[k].old_index < pairs[k - 1].old_index) reordered = true;
  }
  if (reordered) {
    std::vector<ArgPair> by_old = pairs;
    std::sort(by_old.begin(), by_old.end(),
              [](const ArgPair& a, const ArgPair& b) {
                return a.old_index < b.old_index;
              });
    std::string before, after;
    for (const auto& p : by_old) {
      before += (before.empty() ? "" : ", ") + o.arguments[p.old_index].name;
    }
    for (const auto& p : pairs) {
      after += (after.empty() ? "" : ", ") + n.arguments[p.new_index].name;
    }
    out.push_back({ChangeClass::kReorderedArguments,
                   "argument order (" + before + ") is now (" + after + ")"});
  }

  for (const ArgPair& p : pairs) {
    const Argument& a = o.arguments[p.old_index];
    const Argument& b = n.arguments[p.new_index];
    const std::string who = "argument " + singleQuoted(b.name);
    if (a.type.withoutAnnotation() != b.type.withoutAnnotation()) {
      out.push_back({ChangeClass::kTypeChange,
                     who + ": " + a.type.withoutAnnotation().str() + " -> " +
                         b.type.withoutAnnotation().str()});
    }
    if (a.type.annotation != b.type.annotation) {
      out.push_back({ChangeClass::kAliasAnnotationChange,
                     who + ": alias annotation " + annotationText(a.type) +
                         " -> " + annotationText(b.type)});
    }
    if (a.kwarg_only != b.kwarg_only) {
      out.push_back({ChangeClass::kKeywordOnlyChange,
                     who + (b.kwarg_only ? " is now keyword-only"
                                         : " is no longer keyword-only")});
    }
    if (a.default_value != b.default_value) {
      std::string detail;
      if (!a.default_value) {
        detail = who + ": default added (=" + *b.default_value + ")";
      } else if (!b.default_value) {
        detail = who + ": default removed (was =" + *a.default_value + ")";
      } else {
        detail =
            who + ": default =" + *a.default_value + " -> =" + *b.default_value;
      }
      out.push_back({ChangeClass::kDefaultChange, detail});
    }
  }

  for (std::size_t j : added) {
    const Argument& b = n.arguments[j];
    out.push_back(
        {b.default_value ? ChangeClass::kNewArgumentWithDefault
                         : ChangeClass::kNewArgumentWithoutDefault,
         "new argument #" + std::to_string(j + 1) + " (" + b.str() + ")"});
  }
}

void diffReturns(const FunctionSchema& o, const FunctionSchema& n,
                 std::vector<Change>& out) {
  if (o.returns.size() != n.returns.size()) {
    out.push_back(
        {ChangeClass::kReturnChange, "returns " + returnsText(o.returns) +
                                         " -> " + returnsText(n.returns)});
    return;
  }
  for (std::size_t k = 0; k < o.returns.size(); ++k) {
    const Return& a = o.returns[k];
    const Return& b = n.returns[k];
    const std::string who = "return #" + std::to_string(k + 1);
    if (a.type.withoutAnnotation() != b.type.withoutAnnotation()) {
      out.push_back({ChangeClass::kReturnChange,
                     who + ": " + a.type.withoutAnnotation().str() + " -> " +
                         b.type.withoutAnnotation().str()});
    }
    if (a.name != b.name) {
      out.push_back(
          {ChangeClass::kReturnChange, who + ": name " + singleQuoted(a.name) +
                                           " -> " + singleQuoted(b.name)});
    }
    if (a.type.annotation != b.type.annotation) {
      out.push_back({ChangeClass::kAliasAnnotationChange,
                     who + ": alias annotation " + annotationText(a.type) +
                         " -> " + annotationText(b.type)});
    }
  }
}

}  // namespace

std::string_view changeClassName(ChangeClass cls) {
  switch (cls) {
    case ChangeClass::kRemovedOperator:
      return "removed-operator";
    case ChangeClass::kAddedOperator:
      return "added-operator";
    case ChangeClass::kAddedOverload:
      return "added-overload";
    case ChangeClass::kRenamedArgument:
      return "renamed-argument";
    case ChangeClass::kReorderedArguments:
      return "reordered-arguments";
    case ChangeClass::kKeywordOnlyChange:
      return "keyword-only-change";
    case ChangeClass::kTypeChange:
      return "type-change";
    case ChangeClass::kNewArgumentWithDefault:
      return "new-argument-with-default";
    case ChangeClass::kNewArgumentWithoutDefault:
      return "new-argument-without-default";
    case ChangeClass::kRemovedArgument:
      return "removed-argument";
    case ChangeClass::kReturnChange:
      return "return-change";
    case ChangeClass::kAliasAnnotationChange:
      return "alias-annotation-change";
    case ChangeClass::kTagChange:
      return "tag-change";
    case ChangeClass::kDefaultChange:
      return "default-change";
  }
  return "unknown";
}

bool classNeedsAction(ChangeClass cls) {
  switch (cls) {
    case ChangeClass::kAddedOperator:
    case ChangeClass::kAddedOverload:
    case ChangeClass::kTagChange:
    case ChangeClass::kDefaultChange:
      return false;
    default:
      return true;
  }
}

std::vector<Change> diffSchema(const FunctionSchema& old_schema,
                               const FunctionSchema& new_schema) {
  std::vector<Change> out;
  diffArguments(old_schema, new_schema, out);
  diffReturns(old_schema, new_schema, out);
  return out;
}

std::vector<Change> diffTags(const std::vector<std::string>& old_tags,
                             const std::vector<std::string>& new_tags) {
  std::set<std::string> a(old_tags.begin(), old_tags.end());
  std::set<std::string> b(new_tags.begin(), new_tags.end());
  std::string detail;
  for (const auto& t : b) {
    if (!a.count(t)) detail += (detail.empty() ? "+" : ", +") + t;
  }
  for (const auto& t : a) {
    if (!b.count(t)) detail += (detail.empty() ? "-" : ", -") + t;
  }
  if (detail.empty()) return {};
  return {{ChangeClass::kTagChange, "tags " + detail}};
}

bool needsAction(const std::vector<Change>& changes) {
  return std::any_of(changes.begin(), changes.end(),
                     [](const Change& c) { return classNeedsAction(c.cls); });
}

bool needsKernelEdit(const schema::CppSignature& old_sig,
                     const schema::CppSignature& new_sig,
                     const std::vector<Change>& changes) {
  if (old_sig.returns != new_sig.returns) return true;
  if (old_sig.arguments.size() != new_sig.arguments.size()) return true;
  for (std::size_t i = 0; i < old_sig.arguments.size(); ++i) {
    if (old_sig.arguments[i].type != new_sig.arguments[i].type) return true;
  }
  return std::any_of(changes.begin(), changes.end(), [](const Change& c) {
    return c.cls == ChangeClass::kReorderedArguments ||
           c.cls == ChangeClass::kAliasAnnotationChange;
  });
}

}  // namespace accgen::upgrade

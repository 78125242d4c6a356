#pragma once
/// Conditional parameters: the small condition language of a parameter's `when`, and which
/// parameters of a config are active. A parameter with a condition is active only where the
/// condition holds; an inactive one is absent from the trial's config (the command's JSON,
/// the C++ Config), missing in the results file, and left out of the models (the conditional
/// search spaces of Hyperopt and Optuna's define-by-run TPE; Bergstra et al., NeurIPS 2011,
/// call them tree-structured).
///
/// The language, written as a string:
///   condition  := and-expr ( "or" and-expr )*
///   and-expr   := atom ( "and" atom )*
///   atom       := "(" condition ")" | NAME OP literal | NAME ["not"] "in" "[" literal ("," literal)* "]"
///   OP         := "==" | "!=" | "<" | "<=" | ">" | ">="
///   literal    := a number (42, 0.5, -1e-3) or a string in single or double quotes
/// NAME is another parameter of the space. A comparison with an inactive parameter is false
/// (whichever its operator), so `b` under `when = "a == 1"` is inactive wherever `a` is.

#include <string>
#include <vector>

#include "search/types.h"

namespace ranktune::search {

struct Space;

/// A parsed condition (a tree of comparisons joined by and/or).
struct Condition {
  enum class Op { Eq, Ne, Lt, Le, Gt, Ge, In, NotIn, And, Or };
  Op op = Op::Eq;
  std::string name;             ///< the parameter compared (comparisons only)
  std::vector<Value> values;    ///< the literal, or the list of `in`
  std::vector<Condition> parts; ///< the operands of And / Or
  std::string text;             ///< as written (the whole condition, on the root)
};

/// Parses `text`. On a syntax error returns false and sets `error` to a sentence saying what
/// and where ("at character 7: expected a value after '=='").
bool parse_condition(const std::string& text, Condition& out, std::string& error);

/// Checks `c` against `space`, for parameter `self`: every name is another parameter of the
/// space, each literal has its parameter's type (a number or a string), a listed
/// parameter's literals are among its values, and `<`, `>`... compare numbers. Returns "" or
/// a sentence saying what is wrong and what to write instead.
std::string check_condition(const Condition& c, const Space& space, const std::string& self);

/// The parameter names `c` refers to.
std::vector<std::string> condition_names(const Condition& c);

/// Whether `c` holds for `config` (a parameter absent from it is inactive: any comparison
/// with it is false).
bool holds(const Condition& c, const Config& config);

/// Removes the parameters of `config` that are inactive under `space`'s conditions, in
/// dependency order (a parameter depends on those its condition names). Conditions must be
/// acyclic (check_condition_cycles).
void drop_inactive(const Space& space, Config& config);

/// Returns "" when no parameter's condition depends on itself through others, else the
/// cycle as "a -> b -> a".
std::string check_condition_cycles(const Space& space);

}  // namespace ranktune::search

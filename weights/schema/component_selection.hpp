// Loading a subset of a checkpoint (`rootspan load --tensors PATTERN`, the
// `tensors` of rootspan_load_options): shell-style patterns over component
// ids (or tensor names outside the id rule) pick the components to load; the rest are left out before anything is
// resolved, so they are neither loaded nor reported as skipped.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "core/diagnostic.hpp"
#include "weights/schema/schema.hpp"

namespace rootspan::weights {

// Whether the fnmatch(3) glob `pattern` (as below) names `component`: by its
// id, or, for a component that is one tensor whose name lies outside the id
// rule (so that it loads as "tensor.<n>"), by that name ("a b"). The one
// rule for --tensors and --split; rootspan_weights_find follows it too.
bool pattern_names(const std::string &pattern, const ComponentSpec &component);

// The components of `schema` that at least one of `patterns` names,
// in schema order; every component when `patterns` is empty. Patterns are
// fnmatch(3) globs without FNM_PATHNAME or FNM_PERIOD: '*' and '?' match any
// character, '.' and '/' included ("model.layers.*" takes every layer), '[]'
// is a set, '\' quotes the next character. A pattern that matches no
// component fails with ROOTSPAN_ERR_NOT_FOUND (operation
// "select_components"), naming the pattern and a few ids that exist.
Result<ComponentSchema> select_components(ComponentSchema schema, std::span<const std::string> patterns);

// select_components(default_schema(checkpoint), patterns) without making
// the components left out: where every tensor name is a component id, each
// component's id is its name, so the patterns pick tensors by name first
// and only those are made, in the checkpoint's name order (a load of one
// tensor of 10,000 makes one component, not 10,000). std::nullopt where a
// name is not an id (its "tensor.<n>" is its place among all the names) or
// a pattern names no tensor (select_components words that error): the
// caller takes the long way, which gives the same answer.
std::optional<ComponentSchema> select_default_components(const Checkpoint &checkpoint,
                                                         std::span<const std::string> patterns);

}  // namespace rootspan::weights

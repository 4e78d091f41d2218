// `{name}` placeholders in argv, env values and generated files. `{{` and `}}` are literal braces;
// a `{` not followed by `identifier}` is literal, so JSON text needs no escaping. Pure functions.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/spec.h"
#include "core/status.h"

namespace tunectl {

// Names referenced by placeholders, in order of appearance (duplicates kept).
std::vector<std::string> PlaceholderNames(std::string_view tmpl);

// Substitutes every placeholder; a name missing from `values` is InvalidArgument naming `field`.
Result<std::string> ExpandTemplate(std::string_view tmpl, const ParamValues& values,
                                   std::string_view field);

struct Launch {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::map<std::string, std::string> files;
  std::map<std::string, std::string> metric_exprs;  // derived metric -> its expr, {params} bound
};

// Binds parameter values into the spec's command, env, files and derived metrics' expressions
// (a bound expression that does not parse is InvalidArgument naming metrics.<name>.expr).
Result<Launch> BindLaunch(const WorkloadSpec& spec, const ParamValues& values);

}  // namespace tunectl

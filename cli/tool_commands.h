// The CLI's own commands around the loop: `version`, `context list|use` (the contexts file, no
// server needed), shell completion (`completion bash|zsh`, its script rendered from the command
// tree main.cc builds) and `__complete KIND` (names and ids from the server for that script).
// Rendering is pure; the commands follow commands.h's conventions (exit codes, -o).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "cli/client.h"
#include "cli/commands.h"
#include "core/status.h"

namespace tunectl {

// The completion script for `shell` (bash or zsh); InvalidArgument naming the shell otherwise.
Result<std::string> RenderCompletion(const std::string& shell,
                                     const std::vector<CompletionCommand>& commands);

// The client's version string ("0.1.0").
const char* ClientVersion();

int VersionCmd(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err);
int ContextList(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err);
int ContextUse(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err);
int CompletionCmd(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err);
int CompleteCmd(Client& c, const CliOptions& o, std::ostream& out, std::ostream& err);

}  // namespace tunectl

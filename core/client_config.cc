#include "core/client_config.h"

#include <yaml-cpp/yaml.h>

#include <utility>

namespace tunectl {
namespace {

constexpr std::pair<const char*, std::string ClientContext::*> kFields[] = {
    {"name", &ClientContext::name},
    {"server", &ClientContext::server},
    {"ca", &ClientContext::ca},
    {"token", &ClientContext::token},
    {"client-cert", &ClientContext::client_cert},
    {"client-key", &ClientContext::client_key},
};

}  // namespace

Result<ClientConfig> ParseClientConfig(std::string_view text, std::string_view source) {
  const std::string where(source);
  ClientConfig out;
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(where + ": not YAML: " + e.msg);
  }
  if (!root || root.IsNull()) return out;
  if (!root.IsMap()) return Status::InvalidArgument(where + ": expected a mapping");
  try {
    if (auto cur = root["current-context"]) {
      if (!cur.IsScalar())
        return Status::InvalidArgument(where + ": current-context: expected a name");
      out.current = cur.as<std::string>();
    }
    if (auto list = root["contexts"]) {
      if (!list.IsSequence()) return Status::InvalidArgument(where + ": contexts: expected a list");
      for (size_t i = 0; i < list.size(); ++i) {
        const auto& n = list[i];
        const std::string at = where + ": contexts[" + std::to_string(i) + "]";
        if (!n.IsMap()) return Status::InvalidArgument(at + ": expected a mapping");
        ClientContext c;
        for (const auto& kv : n) {
          const auto key = kv.first.as<std::string>();
          bool known = false;
          for (const auto& [name, field] : kFields) {
            if (key != name) continue;
            known = true;
            if (!kv.second.IsScalar())
              return Status::InvalidArgument(at + "." + key + ": expected a string");
            c.*field = kv.second.as<std::string>();
          }
          if (!known)
            return Status::InvalidArgument(
                at + ": unknown field \"" + key +
                "\"; allowed: name, server, ca, token, client-cert, client-key");
        }
        if (c.name.empty()) return Status::InvalidArgument(at + ".name: required");
        out.contexts.push_back(std::move(c));
      }
    }
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(where + ": " + e.msg);
  }
  return out;
}

std::string RenderClientConfig(const ClientConfig& c) {
  YAML::Emitter e;
  e << YAML::BeginMap;
  e << YAML::Key << "current-context" << YAML::Value << c.current;
  e << YAML::Key << "contexts" << YAML::Value << YAML::BeginSeq;
  for (const auto& ctx : c.contexts) {
    e << YAML::BeginMap;
    for (const auto& [name, field] : kFields)
      if (!(ctx.*field).empty()) e << YAML::Key << name << YAML::Value << ctx.*field;
    e << YAML::EndMap;
  }
  e << YAML::EndSeq << YAML::EndMap;
  return std::string(e.c_str()) + "\n";
}

void UpsertContext(ClientConfig& c, ClientContext ctx, bool make_current) {
  const std::string name = ctx.name;
  bool replaced = false;
  for (auto& x : c.contexts)
    if (x.name == name) {
      x = ctx;
      replaced = true;
    }
  if (!replaced) c.contexts.push_back(std::move(ctx));
  if (make_current || c.current.empty()) c.current = name;
}

Result<std::optional<ClientContext>> ChooseContext(const ClientConfig& c, std::string_view name,
                                                   std::string_view server) {
  if (!name.empty()) {
    std::string names;
    for (const auto& x : c.contexts) {
      if (x.name == name) return std::optional<ClientContext>(x);
      names += (names.empty() ? "" : ", ") + x.name;
    }
    return Status::NotFound("context \"" + std::string(name) + "\" is not in the config" +
                            (names.empty() ? " (it has none)" : "; it has: " + names));
  }
  const ClientContext* current = nullptr;
  for (const auto& x : c.contexts)
    if (x.name == c.current) current = &x;
  if (server.empty()) return current ? std::optional<ClientContext>(*current) : std::nullopt;
  if (current && current->server == server) return std::optional<ClientContext>(*current);
  for (const auto& x : c.contexts)
    if (x.server == server) return std::optional<ClientContext>(x);
  return std::optional<ClientContext>();
}

}  // namespace tunectl

#include "attest/dsse.h"

#include <nlohmann/json.hpp>

#include "util/base64.h"

namespace lazyagent {

using nlohmann::json;

std::string dsse_pae(std::string_view payload_type, std::string_view payload) {
  std::string out = "DSSEv1 ";
  out += std::to_string(payload_type.size());
  out += ' ';
  out += payload_type;
  out += ' ';
  out += std::to_string(payload.size());
  out += ' ';
  out += payload;
  return out;
}

Result<DsseEnvelope> dsse_sign(std::string_view payload_type, std::string payload, const SigningKey& key) {
  auto sig = key.sign(dsse_pae(payload_type, payload));
  if (!sig) return sig.error();
  DsseEnvelope e;
  e.payload_type = std::string(payload_type);
  e.payload = std::move(payload);
  e.signatures.push_back({key.keyid(), std::move(*sig)});
  return e;
}

std::string dsse_line(const DsseEnvelope& e) {
  json sigs = json::array();
  for (const auto& s : e.signatures) sigs.push_back({{"keyid", s.keyid}, {"sig", base64_encode(s.sig)}});
  // Field order as the specification shows it; nlohmann's ordered_json keeps it.
  nlohmann::ordered_json j;
  j["payloadType"] = e.payload_type;
  j["payload"] = base64_encode(e.payload);
  j["signatures"] = sigs;
  return j.dump() + "\n";
}

Result<DsseEnvelope> dsse_parse(std::string_view text) {
  if (text.size() > kMaxEnvelopeBytes) {
    return usage_error("the envelope is larger than " + std::to_string(kMaxEnvelopeBytes) + " bytes");
  }
  json j = json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return usage_error("not a DSSE envelope: expected one JSON object {payloadType, payload, signatures}");
  }
  std::vector<std::string> problems;
  DsseEnvelope e;
  if (!j.contains("payloadType") || !j["payloadType"].is_string()) {
    problems.push_back("payloadType: missing or not a string");
  } else {
    e.payload_type = j["payloadType"].get<std::string>();
  }
  if (!j.contains("payload") || !j["payload"].is_string()) {
    problems.push_back("payload: missing or not a string");
  } else if (auto p = base64_decode(j["payload"].get<std::string>()); !p) {
    problems.push_back("payload: not base64");
  } else {
    e.payload = std::move(*p);
  }
  if (!j.contains("signatures") || !j["signatures"].is_array() || j["signatures"].empty()) {
    problems.push_back("signatures: missing, not a list, or empty");
  } else {
    for (std::size_t i = 0; i < j["signatures"].size(); ++i) {
      const json& s = j["signatures"][i];
      const std::string at = "signatures[" + std::to_string(i) + "]";
      if (!s.is_object() || !s.contains("sig") || !s["sig"].is_string()) {
        problems.push_back(at + ".sig: missing or not a string");
        continue;
      }
      auto raw = base64_decode(s["sig"].get<std::string>());
      if (!raw) {
        problems.push_back(at + ".sig: not base64");
        continue;
      }
      std::string keyid = s.contains("keyid") && s["keyid"].is_string() ? s["keyid"].get<std::string>() : "";
      e.signatures.push_back({std::move(keyid), std::move(*raw)});
    }
  }
  if (!problems.empty()) {
    std::string all;
    for (const auto& p : problems) all += (all.empty() ? "" : "; ") + p;
    return usage_error("not a DSSE envelope: " + all);
  }
  return e;
}

bool dsse_verify(const DsseEnvelope& e, const VerifyKey& key) {
  const std::string pae = dsse_pae(e.payload_type, e.payload);
  for (const auto& s : e.signatures) {
    if (key.verify(pae, s.sig)) return true;
  }
  return false;
}

}  // namespace lazyagent

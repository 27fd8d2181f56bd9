// The "sign" step of the pipeline: a judged verdict (passed or failed) made
// portable evidence. It runs on the host, in the process that holds the key
// (the CLI, the MCP server), after the sandbox is gone and the verdict judged
// (triage_run.h): never inside a container, on any engine (on Kubernetes the
// key stays on the CLI's side, the cluster never sees it).
//
//   statement  the in-toto test-result Statement of the run (test_statement.h)
//   envelope   DSSE over it, Ed25519 with the request's key (dsse.h)
//   store      the envelope in the run record (`attestation.envelope`, made
//              durable by the record's own write, which follows anyway), and
//              a copy as artifacts/<run-id>.intoto.jsonl, one line, renamed
//              into place without fsync: two fsyncs more cost 10-60 ms on a
//              loaded host, five times the budget of the whole step (issue
//              42 item 7); `attestation RUN_ID` puts back a copy a crash lost
//   result     `attestation: {path, keyid, sha256}` (sha256 of the file)
//
// A refusal, an infrastructure error or an interrupted run is no verdict and
// is not signed. `lazyagent-oci attestation RUN_ID` prints the envelope;
// `lazyagent-oci verify --key PUB FILE` checks it offline (docs/signing.md).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "attest/signing_key.h"
#include "attest/test_statement.h"
#include "pipeline/run_result.h"
#include "store/run_store.h"
#include "util/result.h"

namespace lazyagent {

struct ProofRequest;

// "<id>.intoto.jsonl" under the run store's artifacts/.
std::string attestation_artifact_name(const std::string& run_id);

// The statement's inputs from a judged result and its request (pure, apart
// from asking git for HEAD of a git seed).
TestStatementInput statement_input(const ProofRequest& req, const RunResult& r, const std::string& backend);

struct SignedVerdict {
  nlohmann::json attestation;  // {path, keyid, sha256}
  std::string envelope;        // the envelope's line (with its "\n")
};

// Signs `r` (passed or failed) with `key` and writes the envelope's file.
Result<SignedVerdict> sign_verdict(const ProofRequest& req, const RunResult& r, const std::string& backend,
                                   const SigningKey& key, const RunStore& store);

// The envelope file's path for a run.
std::string attestation_path(const RunStore& store, const std::string& run_id);

// True for the statuses that are verdicts (passed, failed).
bool is_signed_verdict(const RunResult& r);

}  // namespace lazyagent

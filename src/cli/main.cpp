// lazyagent-oci: run an LLM coding agent's patch without trusting it.
// Everything lives in the library; main only dispatches (see cli.h).
#include <curl/curl.h>

#include "cli/cli.h"

int main(int argc, char** argv) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  const int code = lazyagent::run_cli(argc, argv);
  curl_global_cleanup();
  return code;
}

// SIGINT/SIGTERM handling for the CLI.
//
// The orchestrator must remove its containers even when the user presses ^C
// (ARCHITECTURE invariant 4). The handler only records the signal; long
// operations (waiting for a container, reading logs) poll it and return an
// kInterrupted error, and the owners of resources clean up on the way out.
// This is the one piece of process-wide state: a signal handler has nowhere
// else to write.
#pragma once

#include "util/result.h"

namespace lazyagent {

void install_interrupt_handlers();

// 0 when no signal arrived, else the signal number (SIGINT, SIGTERM).
int interrupted_signal();

// An kInterrupted error ("interrupted by signal N") once a signal arrived; ok before.
Status check_interrupted();

// For tests: pretend a signal arrived (0 clears).
void set_interrupted_for_test(int sig);

// The MCP server's cancellation of its one running tool call
// (mcp_server.h): the same flag the long operations poll, set to a value no
// signal has, so that check_interrupted() says "cancelled by the client" and
// a real signal (which overwrites it) is still told apart.
inline constexpr int kCancelledByClient = -1;
void request_cancel();
// Clears a cancellation (not a signal).
void clear_cancel();

}  // namespace lazyagent

// The eval report's own style sheet and script, inlined into the page
// (report_page.h). The page's Content-Security-Policy names each by its
// sha256, so that they alone run/apply: no other script (not even one the
// escaping missed) and no inline event handler can.
//
// The script filters the task list by category, reason code, minimum
// duration and suspicious, and sorts it (triage order, slowest, fastest, id);
// it reads only the data-* attributes of the task elements and writes only
// `hidden`, the order of the elements and one counter's textContent: no
// innerHTML, no network.
#pragma once

#include <string>

namespace lazyagent {

const std::string& report_css();
const std::string& report_script();

// "'sha256-<base64>'": a CSP source that allows exactly this inline text.
std::string csp_hash_source(const std::string& text);

}  // namespace lazyagent

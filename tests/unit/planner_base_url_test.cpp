// The provider URL as the planner container must name this machine
// (planner_base_url.h): issue 28, a local provider by hand.
#include "catch_compat.h"

#include "provider/planner_base_url.h"
#include "provider/provider_client.h"

using namespace lazyagent;

TEST_CASE("planner base URL: loopback hosts are the container itself, stored as host.containers.internal") {
  const std::vector<std::string> gw = {"10.88.0.1"};
  for (const char* url : {"http://127.0.0.1:8080/v1", "http://localhost:8080/v1", "http://[::1]:8080/v1",
                          "http://127.1.2.3:8080/v1", "HTTP://LOCALHOST:8080/v1"}) {
    INFO(url);
    const PlannerBaseUrl p = planner_base_url(url, gw);
    CHECK(p.url == "http://host.containers.internal:8080/v1");
    CHECK(p.note.find("the planner runs in a container, where ") == 0);
    CHECK(p.note.find("the server must listen on podman's gateway address (10.88.0.1) or on 0.0.0.0") != std::string::npos);
    CHECK(validate_base_url(p.url).ok());
  }
  CHECK(planner_base_url("http://127.0.0.1/v1", {}).url == "http://host.containers.internal/v1");
  CHECK(planner_base_url("http://127.0.0.1:9/api/v1/", {}).url == "http://host.containers.internal:9/api/v1/");
}

TEST_CASE("planner base URL: podman's gateway is this machine, accepted as host.containers.internal") {
  // validate_base_url refuses the bare gateway as "not local".
  CHECK_FALSE(validate_base_url("http://10.88.0.1:8080/v1").ok());
  const PlannerBaseUrl p = planner_base_url("http://10.88.0.1:8080/v1", {"10.88.0.1"});
  CHECK(p.url == "http://host.containers.internal:8080/v1");
  CHECK(p.note == "10.88.0.1 is this machine on podman's network; the planner container names it "
                  "host.containers.internal: stored as http://host.containers.internal:8080/v1");
  CHECK(validate_base_url(p.url).ok());
}

TEST_CASE("planner base URL: anything else is stored as given") {
  const std::vector<std::string> gw = {"10.88.0.1"};
  for (const char* url : {"https://provider.example/v1", "https://127.0.0.1:8443/v1", "http://host.containers.internal:8080/v1",
                          "http://10.88.0.2:8080/v1", "http://192.168.1.5:8080/v1", "http://127.0.0.1.example:8080/v1"}) {
    INFO(url);
    const PlannerBaseUrl p = planner_base_url(url, gw);
    CHECK(p.url == url);
    CHECK(p.note.empty());
  }
}

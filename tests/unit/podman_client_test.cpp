#include "catch_compat.h"

#include "engine/podman/podman_client.h"

using namespace lazyagent;

TEST_CASE("CONTAINER_HOST chooses the socket like podman does") {
  CHECK(*resolve_podman_socket("unix:///tmp/p.sock", 1000, "/run/user/1000") == "/tmp/p.sock");
  CHECK(*resolve_podman_socket(nullptr, 0, nullptr) == "/run/podman/podman.sock");
  CHECK(*resolve_podman_socket("", 1000, "/run/user/1000") == "/run/user/1000/podman/podman.sock");
  auto ssh = resolve_podman_socket("ssh://core@host/run/podman/podman.sock", 0, nullptr);
  REQUIRE_FALSE(ssh.ok());
  CHECK(ssh.error().kind == ErrorKind::kUsage);
  CHECK(ssh.error().message.rfind("CONTAINER_HOST=ssh://core@host/run/podman/podman.sock: only unix://", 0) == 0);
  // No XDG_RUNTIME_DIR (a `su -` login): the path a user session would use.
  CHECK(*resolve_podman_socket(nullptr, 1000, nullptr) == "/run/user/1000/podman/podman.sock");
  CHECK(*resolve_podman_socket(nullptr, 1000, "") == "/run/user/1000/podman/podman.sock");
}

TEST_CASE("API versions below 4 are refused with advice") {
  CHECK(check_api_version("4.3.1").ok());
  CHECK(check_api_version("5.0.0").ok());
  CHECK(check_api_version("3.4.4").error().message ==
        "podman API 3.4.4 is too old: lazyagent-oci needs podman 4.0 or newer");
  CHECK_FALSE(check_api_version("").ok());
}

TEST_CASE("podman's own error message is carried") {
  CHECK(podman_error_text(404, R"({"cause":"no such container","message":"no container with name or ID \"x\" found: no such container","response":404})") ==
        "podman said 404: no container with name or ID \"x\" found: no such container");
  CHECK(podman_error_text(500, "plain failure\n") == "podman said 500: plain failure");
}

TEST_CASE("a DELETE's own answer confirms the removal only when it names the container without an error") {
  const std::string id(64, 'a');
  auto reply = [](long status, std::string body) {
    HttpResponse r;
    r.status = status;
    r.body = std::move(body);
    return r;
  };
  // What podman 4.3.1 answers (measured): the report, no "Err" key.
  CHECK(removal_reported(id, reply(200, R"([{"Id":")" + id + R"(","RawInput":")" + id + R"("}])")));
  CHECK(removal_reported(id, reply(200, R"([{"Id":")" + id + R"(","Err":null}])")));
  CHECK(removal_reported(id, reply(404, R"({"cause":"no such container","message":"no container with name or ID found: no such container","response":404})")));
  // Asked again instead: an error in the report, another container, more than
  // one, not a report, a compat 204, a 404 for another reason, a 500.
  CHECK_FALSE(removal_reported(id, reply(200, R"([{"Id":")" + id + R"(","Err":{}}])")));
  CHECK_FALSE(removal_reported(id, reply(200, R"([{"Id":")" + id + R"(","Err":"device or resource busy"}])")));
  CHECK_FALSE(removal_reported(id, reply(200, R"([{"Id":")" + std::string(64, 'b') + R"("}])")));
  CHECK_FALSE(removal_reported(id, reply(200, R"([{"Id":")" + id + R"("},{"Id":")" + id + R"("}])")));
  CHECK_FALSE(removal_reported(id, reply(200, "[]")));
  CHECK_FALSE(removal_reported(id, reply(200, "not json")));
  CHECK_FALSE(removal_reported(id, reply(204, "")));
  CHECK_FALSE(removal_reported(id, reply(404, R"({"message":"page not found"})")));
  CHECK_FALSE(removal_reported(id, reply(500, R"({"cause":"device or resource busy"})")));
}

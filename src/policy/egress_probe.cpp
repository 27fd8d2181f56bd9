#include "policy/egress_probe.h"

#include <cstdlib>
#include <sstream>

namespace lazyagent {

using nlohmann::json;

namespace {

// argv[1]: seconds per attempt; argv[2]: the engine's targets. No single
// quote anywhere: the shell passes it in single quotes.
constexpr const char* kEgressPython = R"py(
import errno,os,select,socket,sys,threading,time
T=float(sys.argv[1]);t0=time.monotonic();R=[];P=[]
def tcp(l,h,p):
 f=socket.AF_INET6 if ":" in h else socket.AF_INET;a=("[%s]:%d" if f==socket.AF_INET6 else "%s:%d")%(h,p)
 try:
  s=socket.socket(f,socket.SOCK_STREAM);s.setblocking(False);e=s.connect_ex((h,p))
 except OSError as x:
  R.append((l,"tcp",a,"error:"+errno.errorcode.get(x.errno,"E?")));return
 if e in(0,errno.EINPROGRESS):P.append((l,"tcp",a,s))
 else:R.append((l,"tcp",a,O(e)));s.close()
def udp(l,h,q):
 f=socket.AF_INET6 if ":" in h else socket.AF_INET;a=("[%s]:53" if f==socket.AF_INET6 else "%s:53")%h
 try:
  s=socket.socket(f,socket.SOCK_DGRAM);s.setblocking(False);s.connect((h,53));s.send(q);P.append((l,"udp",a,s))
 except OSError as x:R.append((l,"udp",a,O(x.errno)))
def O(e):return{0:"connected",errno.ECONNREFUSED:"refused",errno.ENETUNREACH:"unreachable",errno.EHOSTUNREACH:"unreachable"}.get(e,"error:"+errno.errorcode.get(e,str(e)))
def gw4():
 for ln in open("/proc/net/route").read().splitlines()[1:]:
  f=ln.split()
  if len(f)>2 and f[1]=="00000000" and f[2]!="00000000":return socket.inet_ntoa(bytes.fromhex(f[2])[::-1])
def gw6():
 for ln in open("/proc/net/ipv6_route").read().splitlines():
  f=ln.split()
  if len(f)>4 and f[0]=="0"*32 and f[1]=="00" and f[4]!="0"*32:return socket.inet_ntop(socket.AF_INET6,bytes.fromhex(f[4]))
def ns():
 n=[]
 for ln in open("/etc/resolv.conf").read().splitlines():
  f=ln.split()
  if len(f)>1 and f[0]=="nameserver":n.append(f[1].split("%")[0])
 return n
Q=b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01"
N={}
def look(h):
 try:N[h]=sorted({i[4][0] for i in socket.getaddrinfo(h,443,0,socket.SOCK_STREAM)})
 except OSError as x:N[h]="failed"
for l,f in(("gateway",gw4),("gateway6",gw6),("dns",ns)):
 try:v=f()
 except OSError:R.append((l,"file","-","error:unreadable"));continue
 for h in(v if isinstance(v,list) else[v] if v else[]):
  for p in((53,)if l=="dns" else(22,53,80,443,6443,10250)):tcp(l,h,p)
  if l!="gateway6":udp(l,h,Q)
for t in sys.argv[2].split():
 l,_,a=t.partition("=");h,_,p=a.rpartition(":");tcp(l,h.strip("[]"),int(p))
for h,p in(("1.1.1.1",53),("1.1.1.1",80),("1.1.1.1",443),("2606:4700:4700::1111",443),("2606:4700:4700::1111",53)):tcp("external",h,p)
udp("external","1.1.1.1",Q);udp("external","2606:4700:4700::1111",Q)
th=[threading.Thread(target=look,args=(h,),daemon=True)for h in("kubernetes.default","example.com")]
for x in th:x.start()
def wait(d):
 while P:
  r=d-time.monotonic()
  if r<=0:break
  w=[x[3]for x in P if x[1]=="tcp"];u=[x[3]for x in P if x[1]=="udp"]
  rr,ww,_=select.select(u,w,[],r)
  for x in list(P):
   s=x[3]
   if s in ww:R.append(x[:3]+(O(s.getsockopt(socket.SOL_SOCKET,socket.SO_ERROR)),));P.remove(x);s.close()
   elif s in rr:
    try:s.recv(512);o="answered"
    except OSError as y:o=O(y.errno)
    R.append(x[:3]+(o,));P.remove(x);s.close()
 for x in P:R.append(x[:3]+("timeout",));x[3].close()
 P.clear()
wait(t0+T)
for x in th:x.join(max(0,t0+T-time.monotonic()))
for h in("kubernetes.default","example.com"):
 v=N.get(h)
 R.append(("lookup","dns",h,"timeout"if v is None else v if v=="failed" else"resolved:"+",".join(v)))
 if isinstance(v,list):
  for a in v:tcp("lookup:"+h,a,443)
if P:wait(time.monotonic()+T)
for x in R:print("lazyagent-probe: egress=%s %s %s %s"%x)
print("lazyagent-probe: egress_done=%d %dms"%(len(R),(time.monotonic()-t0)*1000));sys.stdout.flush();os._exit(0)
)py";

}  // namespace

const std::string& egress_probe_shell() {
  static const std::string shell = [] {
    const std::string py = kEgressPython;
    if (py.find('\'') != std::string::npos) std::abort();  // would end the shell's quoting
    return "if command -v python3 >/dev/null 2>&1; then printf '%s: egress_runner=python3\\n' $p\n"
           "(cd / && exec python3 -I -S -c '" + py + "' " + std::to_string(kEgressAttemptSeconds) +
           " \"$4\") 2>/dev/null\nelse printf '%s: egress_runner=none\\n' $p; fi\n";
  }();
  return shell;
}

bool EgressAttempt::reached() const {
  return outcome == "connected" || outcome == "refused" || outcome == "answered" ||
         outcome.rfind("resolved:", 0) == 0;
}

bool take_egress_line(const std::string& key, const std::string& value, EgressReport* r) {
  if (key == "egress_runner") {
    r->runner = value;
    return true;
  }
  if (key == "egress") {
    std::istringstream in(value);
    EgressAttempt a;
    in >> a.target >> a.proto >> a.address >> a.outcome;
    if (!a.outcome.empty()) r->attempts.push_back(a);
    return true;
  }
  if (key == "egress_done") {
    // "N Mms": finished only if N attempts were read.
    std::istringstream in(value);
    long n = -1;
    std::string ms;
    in >> n >> ms;
    r->ms = ms.size() > 2 ? std::strtol(ms.c_str(), nullptr, 10) : -1;
    r->finished = n >= 0 && static_cast<std::size_t>(n) == r->attempts.size();
    return true;
  }
  return false;
}

std::vector<std::string> egress_violations(const EgressReport& r, bool required) {
  std::vector<std::string> v;
  for (const auto& a : r.attempts) {
    if (a.reached()) {
      v.push_back("egress reached: " + a.target + " " + a.proto + " " + a.address + " (" + a.outcome + ")");
    }
  }
  if (required && !r.finished) {
    v.push_back(r.runner == "none"
                    ? "the egress probe could not run: the sandbox image has no python3, and this isolation mode "
                      "rests on the probe (use an image with python3, or a RuntimeClass with no network)"
                    : "the egress probe did not finish, and this isolation mode rests on it");
  }
  return v;
}

json egress_to_json(const EgressReport& r) {
  json attempts = json::array(), reached = json::array();
  for (const auto& a : r.attempts) {
    attempts.push_back({{"target", a.target}, {"proto", a.proto}, {"address", a.address}, {"outcome", a.outcome}});
    if (a.reached()) reached.push_back(a.target + " " + a.proto + " " + a.address);
  }
  json j{{"runner", r.runner.empty() ? json(nullptr) : json(r.runner)},
         {"ran", r.finished},
         {"attempt_seconds", kEgressAttemptSeconds},
         {"attempts", attempts},
         {"reached", reached}};
  j["ms"] = r.ms >= 0 ? json(r.ms) : json(nullptr);
  return j;
}

}  // namespace lazyagent

#include "policy/egress_probe.h"

#include <cstdlib>
#include <sstream>

namespace lazyagent {

using nlohmann::json;

namespace {

// argv[1]: seconds per attempt; argv[2]: the engine's targets. No single
// quote anywhere: the shell passes it in single quotes.
constexpr const char* kEgressPython = R"py(
import errno,os,select,socket,struct,sys,time
T=float(sys.argv[1]);t0=time.monotonic();R=[];P=[]
def fmt(h,p):return("[%s]:%d"if":"in h else"%s:%d")%(h,p)
def fam(h):return socket.AF_INET6 if":"in h else socket.AF_INET
def O(e):return{0:"connected",errno.ECONNREFUSED:"refused",errno.ENETUNREACH:"unreachable",errno.EHOSTUNREACH:"unreachable"}.get(e,"error:"+errno.errorcode.get(e,str(e)))
def tcp(l,h,p):
 a=fmt(h,p)
 try:
  s=socket.socket(fam(h),socket.SOCK_STREAM);s.setblocking(False);e=s.connect_ex((h,p))
 except OSError as x:R.append((l,"tcp",a,O(x.errno)));return
 if e in(0,errno.EINPROGRESS):P.append((l,"tcp",a,s))
 else:R.append((l,"tcp",a,O(e)));s.close()
def Q(n):return b"\x4c\x5a\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"+b"".join(bytes([len(p)])+p.encode()for p in n.split(".")if p)+b"\x00\x00\x01\x00\x01"
def udp(l,h,n,a=None):
 a=a or fmt(h,53)
 try:
  s=socket.socket(fam(h),socket.SOCK_DGRAM);s.setblocking(False);s.connect((h,53));s.send(Q(n));P.append((l,"udp",a,s))
 except OSError as x:R.append((l,"udp",a,O(x.errno)))
def A(m):
 try:
  i=12
  while m[i]:i+=m[i]+1
  i+=5;r=[]
  for _ in range(struct.unpack(">H",m[6:8])[0]):
   i+=2 if m[i]>=192 else m.index(0,i)-i+1
   t,_,_,n=struct.unpack(">HHIH",m[i:i+10]);i+=10
   if t==1 and n==4:r.append(socket.inet_ntoa(m[i:i+4]))
   i+=n
  return r
 except(IndexError,ValueError,struct.error):return[]
def rd(f):
 with open(f)as x:return x.read().splitlines()
def gw4():
 for ln in rd("/proc/net/route")[1:]:
  f=ln.split()
  if len(f)>2 and f[1]=="00000000"and f[2]!="00000000":return[socket.inet_ntoa(bytes.fromhex(f[2])[::-1])]
 return[]
def gw6():
 for ln in rd("/proc/net/ipv6_route"):
  f=ln.split()
  if len(f)>4 and f[0]=="0"*32 and f[1]=="00"and f[4]!="0"*32:return[socket.inet_ntop(socket.AF_INET6,bytes.fromhex(f[4]))]
 return[]
S=[]
def ns():
 n=[]
 for ln in rd("/etc/resolv.conf"):
  f=ln.split()
  if len(f)>1 and f[0]=="nameserver":n.append(f[1].split("%")[0])
  if len(f)>1 and f[0]in("search","domain"):S[:]=f[1:]
 return n
def lo(h):return h.startswith("127.")or h=="::1"
N=[];G=[]
for t in sys.argv[2].split():
 l,_,a=t.partition("=")
 if l=="lookup":N.append(a)
 else:G.append((l,a))
Z=(N or["kubernetes.default"])[0]
for l,f in(("gateway",gw4),("gateway6",gw6),("dns",ns)):
 try:v=f()
 except OSError:R.append((l,"file","-","unreadable"));continue
 for h in v:
  if lo(h):R.append((l,"any",h,"loopback"));continue
  for p in((53,)if l=="dns"else(22,53,80,443,6443,10250)):tcp(l,h,p)
  if l=="gateway":udp(l,h,Z)
  if l=="dns":
   for n in N+["kubernetes.default"]+["kubernetes.default."+d for d in S[:4]]:udp("lookup",h,n,n+"@"+h)
for l,a in G:
 h,_,p=a.rpartition(":");h=h.strip("[]");tcp(l,h,int(p))
 if p=="53":udp(l,h,Z)
def wait(d):
 while P:
  r=d-time.monotonic()
  if r<=0:break
  w=[x[3]for x in P if x[1]=="tcp"];u=[x[3]for x in P if x[1]!="tcp"]
  try:rr,ww,_=select.select(u,w,[],r)
  except OSError:
   rr,ww=[],[]
   for x in list(P):
    try:a,b,_=select.select([x[3]]if x[1]!="tcp"else[],[x[3]]if x[1]=="tcp"else[],[],0)
    except OSError as y:R.append(x[:3]+(O(y.errno),));P.remove(x);x[3].close();continue
    rr+=a;ww+=b
   if not rr and not ww:time.sleep(0.01)
  for x in list(P):
   s=x[3]
   if s in ww:R.append(x[:3]+(O(s.getsockopt(socket.SOL_SOCKET,socket.SO_ERROR)),));P.remove(x);s.close()
   elif s in rr:
    try:
     a=A(s.recv(1500));o="resolved:"+",".join(a)if a else"answered"
     for i in a:
      if not lo(i):tcp("lookup:"+x[2].split("@")[0],i,443)
    except OSError as y:o=O(y.errno)
    R.append(x[:3]+(o,));P.remove(x);s.close()
 for x in P:R.append(x[:3]+("timeout",));x[3].close()
 P.clear()
wait(t0+T)
if P:wait(time.monotonic()+T)
for x in R:print("lazyagent-probe: egress=%s %s %s %s"%x)
print("lazyagent-probe: egress_done=%d %dms"%(len(R),(time.monotonic()-t0)*1000));sys.stdout.flush();os._exit(0)
)py";

}  // namespace

const std::string& egress_probe_shell() {
  static const std::string shell = [] {
    const std::string py = kEgressPython;
    if (py.find('\'') != std::string::npos) std::abort();  // would end the shell's quoting
    // $n and $d: the interfaces sysfs and /proc/net/dev listed just before
    // (isolation_probe_shell). Only lo in both: no route to any address, so
    // every attempt could only fail at once; the interpreter's start (30-50
    // ms of a run) is spent only where something could be reached, or where
    // the engine asks for it always ($5, Kubernetes).
    return "if [ \"$5\" != always ] && [ \"$n\" = lo, ] && [ \"$d\" = lo, ]; then printf '%s: egress_runner=" +
           std::string(kEgressNotNeeded) + "\\n' $p\n"
           "elif command -v python3 >/dev/null 2>&1; then printf '%s: egress_runner=python3\\n' $p\n"
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
                : r.runner == kEgressNotNeeded
                    ? "the egress probe was not run (the sandbox script was not asked to run it always), and this "
                      "isolation mode rests on it"
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
  if (r.runner == kEgressNotNeeded) {
    j["not_needed"] = "only lo in the sandbox (sysfs and /proc/net/dev): no route to any address, nothing to try";
  }
  return j;
}

}  // namespace lazyagent

#include "agent/transport.h"

#include <mutex>

#include "core/strings.h"

#ifdef HONE_AGENT_HAVE_CURL
#include <curl/curl.h>
#endif

namespace hone::agent {

std::string TransportResponse::Header(std::string_view name) const {
  std::string want = ToLower(name);
  for (const auto& [k, v] : headers) {
    if (ToLower(k) == want) return v;
  }
  return "";
}

bool IsLoopbackUrl(const std::string& url) {
  std::string_view t = url;
  for (std::string_view scheme : {"http://", "https://"}) {
    if (t.starts_with(scheme)) t.remove_prefix(scheme.size());
  }
  std::string_view host = t.substr(0, t.find_first_of("/"));
  if (host.starts_with("[")) return host.starts_with("[::1]");
  host = host.substr(0, host.find(':'));
  return host == "localhost" || host.starts_with("127.");
}

namespace {

Result<TransportResponse> PostHttp(const TransportRequest& request) {
  HONE_ASSIGN_OR_RETURN(net::Url base, net::ParseUrl(request.url));
  net::HttpRequest r;
  r.method = "POST";
  r.host = base.host;
  r.port = base.port;
  r.path = base.path;
  r.headers = request.headers;
  r.body = request.body;
  HONE_ASSIGN_OR_RETURN(net::HttpResponse resp, net::Fetch(r, request.timeout));
  return TransportResponse{resp.status, std::move(resp.headers), std::move(resp.body)};
}

#ifdef HONE_AGENT_HAVE_CURL
struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* s) const { curl_slist_free_all(s); }
};

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  std::string_view line(data, size * n);
  size_t colon = line.find(':');
  if (colon != std::string_view::npos) {
    static_cast<net::Headers*>(user)->emplace_back(std::string(Trim(line.substr(0, colon))),
                                                   std::string(Trim(line.substr(colon + 1))));
  }
  return size * n;
}

Result<TransportResponse> PostHttps(const TransportRequest& request) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) return Internal("libcurl could not create a handle");
  std::unique_ptr<curl_slist, SlistDeleter> headers;
  curl_slist* list = nullptr;
  bool has_type = false;
  for (const auto& [k, v] : request.headers) {
    has_type = has_type || ToLower(k) == "content-type";
    list = curl_slist_append(list, (k + ": " + v).c_str());
  }
  if (!has_type) list = curl_slist_append(list, "Content-Type: application/json");
  headers.reset(list);
  TransportResponse out;
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https,http");
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, request.body.data());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &out.body);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &out.headers);
  CURLcode rc = curl_easy_perform(c);
  // The URL names only the endpoint; headers (the key) never appear in errors.
  std::string where = "POST " + request.url;
  switch (rc) {
    case CURLE_OK: break;
    case CURLE_OPERATION_TIMEDOUT: return DeadlineExceeded(where + ": timed out");
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_SSL_CONNECT_ERROR: return Unavailable(where + ": " + curl_easy_strerror(rc));
    default: return DataLoss(where + ": " + curl_easy_strerror(rc));
  }
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  out.status = static_cast<int>(status);
  return out;
}
#endif

}  // namespace

bool HttpsSupported() {
#ifdef HONE_AGENT_HAVE_CURL
  return true;
#else
  return false;
#endif
}

Result<TransportResponse> PostWithCurl(const TransportRequest& request) {
#ifdef HONE_AGENT_HAVE_CURL
  return PostHttps(request);
#else
  return Unavailable("hone was built without libcurl (scripts/setup.sh installs libcurl4-openssl-dev)");
#endif
}

Result<TransportResponse> RealTransport::Post(const TransportRequest& request) {
  if (request.url.starts_with("http://")) return PostHttp(request);
  if (request.url.starts_with("https://")) {
#ifdef HONE_AGENT_HAVE_CURL
    return PostHttps(request);
#else
    return Unavailable("https endpoints need libcurl: run scripts/setup.sh (libcurl4-openssl-dev) and rebuild");
#endif
  }
  return InvalidArgument("unsupported URL scheme (http:// or https://): '" + request.url + "'");
}

}  // namespace hone::agent

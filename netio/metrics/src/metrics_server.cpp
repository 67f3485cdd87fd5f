// SPDX-License-Identifier: MIT
// MetricsServer (netio/metrics/metrics_server.hpp) on libmicrohttpd: its internal thread
// polls (epoll) and answers; the bounds (connections, request size, idle time) are its options.
// docs/design/metrics.md says why libmicrohttpd and not cpp-httplib.
#include "netio/metrics/metrics_server.hpp"

#include "host_port.hpp"
#include "netio/context.hpp"
#include "netio/error.hpp"

#include <fmt/format.h>
#include <microhttpd.h>

#include <algorithm>
#include <atomic>
#include <cstring>

namespace netio {

struct MetricsServer::Impl {
  MetricsRegistry registry;
  metrics_detail::HostPort address;
  MHD_Daemon* daemon = nullptr;
  std::uint16_t port = 0;
  std::atomic<std::uint64_t> scrapes{0}, rejected{0};

  static MHD_Result answer(void* self, MHD_Connection* connection, const char* url, const char* method,
                           const char* /*version*/, const char* /*upload_data*/, std::size_t* /*upload_data_size*/,
                           void** /*request_state*/) {
    auto* impl = static_cast<Impl*>(self);
    // Answered on the first call, before any body: a body is not read, whatever it is.
    if (std::strcmp(method, MHD_HTTP_METHOD_GET) == 0 && std::strcmp(url, "/metrics") == 0) {
      impl->scrapes.fetch_add(1, std::memory_order_relaxed);
      const std::vector<Metric> metrics = impl->registry.collect();
      return impl->respond(connection, MHD_HTTP_OK, to_prometheus_text(metrics),
                           "text/plain; version=0.0.4; charset=utf-8");
    }
    impl->rejected.fetch_add(1, std::memory_order_relaxed);
    return impl->respond(connection, MHD_HTTP_NOT_FOUND, "not found: only GET /metrics\n", "text/plain");
  }

  MHD_Result respond(MHD_Connection* connection, unsigned status, const std::string& body, const char* type) {
    MHD_Response* response =
        MHD_create_response_from_buffer(body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
    if (response == nullptr) return MHD_NO;  // out of memory: libmicrohttpd closes the connection
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    const MHD_Result result = MHD_queue_response(connection, status, response);
    MHD_destroy_response(response);
    return result;
  }
};

MetricsServer::MetricsServer(Context& context, MetricsServerOptions options)
    : MetricsServer(context.metrics(), std::move(options)) {}

MetricsServer::MetricsServer(MetricsRegistry registry, MetricsServerOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->registry = std::move(registry);
  impl_->address = metrics_detail::parse_host_port(options.address, "metrics server: address");
  if (options.max_connections == 0)
    throw Error(Errc::invalid_option, "metrics server: max_connections 0: must be at least 1");
  // libmicrohttpd needs room for its own bookkeeping besides the request.
  const std::size_t memory_limit = std::max<std::size_t>(options.max_request_bytes, 1024) + 2048;
  const auto addresses = metrics_detail::resolve(impl_->address, SOCK_STREAM, "metrics server: address");
  std::string why = "no address";
  for (const addrinfo* a = addresses.get(); a != nullptr && impl_->daemon == nullptr; a = a->ai_next) {
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL;
    if (a->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    impl_->daemon =
        MHD_start_daemon(flags, impl_->address.port, nullptr, nullptr, &Impl::answer, impl_.get(), MHD_OPTION_SOCK_ADDR,
                         a->ai_addr, MHD_OPTION_CONNECTION_LIMIT, options.max_connections,
                         MHD_OPTION_CONNECTION_TIMEOUT, static_cast<unsigned>(options.connection_timeout.count()),
                         MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit, MHD_OPTION_END);
    if (impl_->daemon == nullptr) why = std::strerror(errno);
  }
  if (impl_->daemon == nullptr)
    throw Error(Errc::backend_error,
                fmt::format("metrics server: cannot listen on {}: {}", impl_->address.to_string(), why));
  const MHD_DaemonInfo* info = MHD_get_daemon_info(impl_->daemon, MHD_DAEMON_INFO_BIND_PORT);
  impl_->port = info != nullptr ? info->port : impl_->address.port;
}

MetricsServer::~MetricsServer() { MHD_stop_daemon(impl_->daemon); }

std::uint16_t MetricsServer::port() const noexcept { return impl_->port; }
std::string MetricsServer::url() const {
  return fmt::format("http://{}/metrics", metrics_detail::HostPort{impl_->address.host, impl_->port}.to_string());
}
std::uint64_t MetricsServer::scrapes() const noexcept { return impl_->scrapes.load(std::memory_order_relaxed); }
std::uint64_t MetricsServer::rejected() const noexcept { return impl_->rejected.load(std::memory_order_relaxed); }

}  // namespace netio

// SPDX-License-Identifier: MIT
#include "pubsub_metrics.hpp"

#include "netio/context.hpp"

namespace netio::pubsub::detail {

namespace {

// A series per tag that dropped (at most max_tags_with_drop_series, then tag="other").
void add_drops_by_tag(std::vector<Metric>& out, const char* name, const char* help,
                      std::vector<std::pair<std::string, std::string>> labels, const DropsByTag& drops) {
  labels.emplace_back("tag", "");
  for (auto& [tag, dropped] : drops.snapshot()) {
    labels.back().second = std::move(tag);
    out.push_back({name, MetricType::counter, help, labels, double(dropped)});
  }
}

}  // namespace

MetricsRegistry::Registration add_publish_metrics(Context& context, std::string endpoint,
                                                  std::function<PublishStats()> stats, const DropsByTag& drops) {
  return context.metrics().add([endpoint = std::move(endpoint), stats = std::move(stats),
                                &drops](std::vector<Metric>& out) {
    const PublishStats s = stats();
    auto add = [&](const char* name, MetricType type, const char* help, std::uint64_t value) {
      out.push_back({name, type, help, {{"socket", "publish"}, {"endpoint", endpoint}}, double(value)});
    };
    add("netio_publish_messages_total", MetricType::counter, "publish() calls completed", s.published);
    add("netio_publish_unrouted_total", MetricType::counter, "Messages of tags nobody subscribed to", s.unrouted);
    add("netio_publish_deliveries_total", MetricType::counter, "Messages handed to a subscriber's connection",
        s.deliveries);
    add("netio_publish_dropped_total", MetricType::counter, "Messages dropped for subscribers under drop", s.dropped);
    add("netio_publish_subscriptions", MetricType::gauge, "Current (tag, subscriber, mode) subscriptions",
        s.subscriptions);
    add("netio_publish_connections", MetricType::gauge, "Current data connections to subscribers", s.connections);
    add("netio_publish_subscribers", MetricType::gauge, "Current subscribers with a subscription", s.subscribers);
    add("netio_publish_subscribers_lost_total", MetricType::counter,
        "Subscribers whose control connection went away with subscriptions", s.subscribers_lost);
    add_drops_by_tag(out, "netio_publish_tag_dropped_total", "Messages dropped under drop, by tag (64 tags at most)",
                     {{"socket", "publish"}, {"endpoint", endpoint}}, drops);
  });
}

MetricsRegistry::Registration add_subscribe_metrics(Context& context, std::function<SubscribeStats()> stats,
                                                    const DropsByTag& drops) {
  return context.metrics().add([stats = std::move(stats), &drops](std::vector<Metric>& out) {
    const SubscribeStats s = stats();
    auto add = [&](const char* name, const char* help, std::uint64_t value) {
      out.push_back({name, MetricType::counter, help, {{"socket", "subscribe"}}, double(value)});
    };
    add("netio_subscribe_messages_total", "Messages delivered to the handler or taken by recv()", s.received);
    add("netio_subscribe_dropped_total", "Messages publishers dropped for this subscriber, as they reported",
        s.dropped);
    add("netio_subscribe_subscriptions_lost_total", "Times a publisher went away with subscriptions",
        s.subscriptions_lost);
    add("netio_subscribe_resubscriptions_total", "Times all of a publisher's subscriptions were restored",
        s.resubscribed);
    add("netio_subscribe_malformed_total", "Data messages too short to carry a tag (ignored)", s.malformed);
    add_drops_by_tag(out, "netio_subscribe_tag_dropped_total",
                     "Messages publishers dropped for this subscriber, by tag (64 tags at most)",
                     {{"socket", "subscribe"}}, drops);
  });
}

}  // namespace netio::pubsub::detail

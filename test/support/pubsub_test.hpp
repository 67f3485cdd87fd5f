// SPDX-License-Identifier: MIT
// What every publish/subscribe integration test uses: the two sockets, the numbered test
// messages and their checker, the loopback transports, and the short names for them.
#pragma once

#include "netio/pubsub/publish_socket.hpp"
#include "netio/pubsub/subscribe_socket.hpp"
#include "support/pubsub_messages.hpp"
#include "support/transports.hpp"

#include <chrono>

using namespace std::chrono_literals;
using netio::Endpoint;
using netio::pubsub::Backpressure;
using netio::pubsub::Mode;
using netio::pubsub::PublishOptions;
using netio::pubsub::PublishSocket;
using netio::pubsub::SubscribeOptions;
using netio::pubsub::SubscribeSocket;
using netio::pubsub::Tag;
using netio::test::eventually;
using netio::test::pubsub_message;
using netio::test::StreamChecker;

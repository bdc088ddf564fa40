#ifndef WARREN_CRABBITMQ_SHIM_H
#define WARREN_CRABBITMQ_SHIM_H

// librabbitmq 0.11 (Debian 12) installs its headers at the top level; 0.12+ moved them to rabbitmq-c/.
#if __has_include(<rabbitmq-c/amqp.h>)
#include <rabbitmq-c/amqp.h>
#include <rabbitmq-c/tcp_socket.h>
#include <rabbitmq-c/ssl_socket.h>
#else
#include <amqp.h>
#include <amqp_framing.h>
#include <amqp_tcp_socket.h>
#include <amqp_ssl_socket.h>
#endif

// amqp_login_with_properties is variadic, which Swift cannot call: this fixes the SASL PLAIN form.
static inline amqp_rpc_reply_t warren_login_plain(amqp_connection_state_t state, const char *vhost, int channel_max,
                                                  int frame_max, int heartbeat, const amqp_table_t *properties,
                                                  const char *user, const char *password) {
    return amqp_login_with_properties(state, vhost, channel_max, frame_max, heartbeat, properties,
                                      AMQP_SASL_METHOD_PLAIN, user, password);
}

#endif

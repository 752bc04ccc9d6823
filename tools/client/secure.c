/* The headless client's secure rounds (see secure.h). */
#include "secure.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json_writer.h"
#include "fed/secagg_message.h"

void client_secure_init(client_secure *s, const sdfed_task *task, int64_t index, client_send_fn send, void *ctx) {
    memset(s, 0, sizeof *s);
    s->round = -1;
    s->index = index;
    s->task = task;
    s->send = send;
    s->ctx = ctx;
}

void client_secure_end(client_secure *s) {
    native_secagg_client_free(&s->sa);
    if (s->own.cipher) native_crypto_stream_close(&s->own);
    free(s->global);
    free(s->trained);
    free(s->masked_request);
    sdfed_buffer_free(&s->last);
    client_secure_init(s, s->task, s->index, s->send, s->ctx);
}

/* its message of the round in a secure frame (kept as its last unless it is the last) */
static void send_frame(client_secure *s, const sdfed_buffer *msg) {
    sdfed_buffer frame = {0};
    if (sdfed_secure_frame_encode(msg->data, msg->size, &frame, NULL) == SDFED_OK)
        s->send(s->ctx, frame.data, frame.size, 1);
    sdfed_buffer_free(&frame);
    if (msg == &s->last) return;
    s->last.size = 0;
    sdfed_sink sink = sdfed_buffer_sink(&s->last);
    if (sink.write(sink.ctx, msg->data, msg->size)) s->last.size = 0; /* out of memory: nothing to send again */
}

/* Whether the request asks again for its last message (the answer of kind
 * `answer`): then it goes again. */
static int asked_again(client_secure *s, int answer) {
    if (s->last.size == 0 || sdfed_secagg_msg_kind_of(s->last.data, s->last.size) != answer) return 0;
    send_frame(s, &s->last);
    snprintf(s->log, sizeof s->log, "round %lld: its %s message sent again", (long long)s->round,
             sdfed_secagg_msg_name(answer));
    return 1;
}

/* Refuses the server's request with `code` (the reason in err) and leaves the round. */
static void refuse(client_secure *s, sdfed_code code, const sdfed_error *err) {
    sdfed_buffer b = {0};
    sdfed_json_writer w;
    sdfed_jw_begin(&w, &b, "secagg_refusal");
    sdfed_jw_int(&w, "round", s->round);
    sdfed_jw_string(&w, "code", sdfed_code_name(code));
    sdfed_jw_string(&w, "message", err->message);
    if (sdfed_jw_end(&w, NULL) == SDFED_OK) s->send(s->ctx, b.data, b.size, 0);
    sdfed_buffer_free(&b);
    const int64_t round = s->round;
    client_secure_end(s);
    snprintf(s->log, sizeof s->log, "round %lld: refused the server's request (%s): %s", (long long)round,
             sdfed_code_name(code), err->message);
}

/* Whether it leaves the round before its message of `stage` (the task's
 * dropouts): vanish set, the round forgotten. */
static int leaves(client_secure *s, sdfed_secagg_stage stage) {
    if (!sdfed_secagg_drops_out(s->task, s->round, s->index, stage)) return 0;
    const int64_t round = s->round;
    client_secure_end(s);
    s->vanish = 1;
    snprintf(s->log, sizeof s->log, "round %lld: leaving before its %s message (the task's dropouts): disconnecting",
             (long long)round, sdfed_secagg_stage_name(stage));
    return 1;
}

/* the code of a step's refusal: the stage machine's, else `otherwise` */
static sdfed_code code_of(int rc, sdfed_code otherwise) {
    if (rc >= SDFED_SECAGG_WRONG_STAGE && rc < SDFED_SECAGG_CODE_END)
        return sdfed_code_from_name(sdfed_secagg_code_name(rc));
    return otherwise;
}

int client_secure_start(client_secure *s, const sdfed_message *m, const float *global, size_t dims) {
    if (s->round == m->round) { /* the server came back: its requests say where the round is */
        if (!asked_again(s, SDFED_SECAGG_MSG_ADVERTISE))
            snprintf(s->log, sizeof s->log, "round %lld: going on with the secure round", (long long)m->round);
        return 0;
    }
    client_secure_end(s);
    s->round = m->round;
    sdfed_secagg_plan plan;
    sdfed_error err = {0};
    unsigned char key[32];
    int rc = sdfed_secagg_plan_make(s->task, m->secure_n, dims, &plan, &err);
    if (rc == SDFED_OK && (plan.params.k != m->secure_k || plan.params.t != m->secure_t ||
                           plan.params.min_inputs != m->secure_min_inputs))
        rc = sdfed_fail(&err, SDFED_ERR_FORMAT,
                        "the server's k %d, t %d, min_inputs %d for %d clients are not the task's (%d, %d, %d)",
                        m->secure_k, m->secure_t, m->secure_min_inputs, m->secure_n, plan.params.k, plan.params.t,
                        plan.params.min_inputs);
    if (rc) {
        refuse(s, SDFED_CODE_SECAGG_BAD_REQUEST, &err);
        return -1;
    }
    if (leaves(s, SDFED_SECAGG_ADVERTISE)) return -1;
    s->dims = dims;
    s->global = malloc(sizeof *s->global * dims);
    rc = s->global ? native_crypto_random(key, sizeof key, &err) : sdfed_fail(&err, SDFED_ERR_NOMEM, "out of memory");
    if (rc == SDFED_OK) rc = native_crypto_stream_open(&s->own, key, &err);
    memset(key, 0, sizeof key);
    sdfed_buffer out = {0};
    if (rc == SDFED_OK) {
        memcpy(s->global, global, sizeof *s->global * dims);
        sdfed_secagg_bytes secret = native_crypto_stream_source(&s->own);
        rc = native_secagg_client_advertise(&s->sa, &plan, m->round, &secret, &out, &err);
    }
    if (rc == SDFED_OK) send_frame(s, &out);
    sdfed_buffer_free(&out);
    if (rc) {
        refuse(s, SDFED_CODE_SECAGG_BAD_REQUEST, &err);
        return -1;
    }
    snprintf(s->log, sizeof s->log, "round %lld: secure, place %d of %d (k %d, t %d): keys advertised",
             (long long)m->round, m->place, m->secure_n, m->secure_k, m->secure_t);
    return 0;
}

/* the request answered by a step of the client's (its share or unmask
 * step), or refused with the step's code */
static void answer(client_secure *s,
                   int (*step)(native_secagg_client *, const unsigned char *, size_t, sdfed_buffer *, sdfed_error *),
                   const unsigned char *request, size_t len, const char *said) {
    sdfed_error err = {0};
    sdfed_buffer out = {0};
    int rc = step(&s->sa, request, len, &out, &err);
    if (rc == SDFED_OK) {
        send_frame(s, &out);
        snprintf(s->log, sizeof s->log, "round %lld: %s", (long long)s->round, said);
    } else {
        refuse(s, code_of(rc, SDFED_CODE_SECAGG_BAD_REQUEST), &err);
    }
    sdfed_buffer_free(&out);
}

/* its masked input for the request (trained already) */
static void mask(client_secure *s, const unsigned char *request, size_t len) {
    if (leaves(s, SDFED_SECAGG_MASKED)) return;
    sdfed_error err = {0};
    sdfed_secagg_list relayed;
    /* a request it cannot read, or a pair that does not open */
    int rc = sdfed_secagg_read_relayed(request, len, SDFED_SECAGG_MSG_MASKED_REQUEST, s->round, s->sa.core.holders - 1,
                                       &relayed, &err);
    if (rc) {
        refuse(s, code_of(rc, SDFED_CODE_SECAGG_BAD_REQUEST), &err);
        return;
    }
    sdfed_rng rounding_state;
    sdfed_secagg_bytes rounding = sdfed_secagg_rounding(&rounding_state, s->task->seed, s->round, s->index);
    sdfed_secagg_bytes noise = native_crypto_stream_source(&s->own);
    sdfed_buffer out = {0};
    rc = native_secagg_client_mask(&s->sa, request, len, s->trained, s->global, s->samples, &rounding,
                                   s->sa.core.plan.sigma2 ? &noise : NULL, &out, &err);
    if (rc == SDFED_OK) {
        send_frame(s, &out);
        snprintf(s->log, sizeof s->log, "round %lld: masked input sent", (long long)s->round);
    } else {
        refuse(s, code_of(rc, SDFED_CODE_SECAGG_AUTH_FAILED), &err);
    }
    sdfed_buffer_free(&out);
}

void client_secure_trained(client_secure *s, int64_t round, const float *x, int64_t samples) {
    if (round != s->round || s->trained) return;
    if (!(s->trained = malloc(sizeof *s->trained * s->dims))) {
        sdfed_error err = {0};
        sdfed_fail(&err, SDFED_ERR_NOMEM, "out of memory");
        refuse(s, SDFED_CODE_SERVER_ERROR, &err);
        return;
    }
    memcpy(s->trained, x, sizeof *s->trained * s->dims);
    s->samples = samples;
    if (!s->masked_request) return;
    mask(s, s->masked_request, s->masked_request_len);
    free(s->masked_request);
    s->masked_request = NULL;
}

void client_secure_request(client_secure *s, const unsigned char *frame, size_t len) {
    const unsigned char *msg;
    size_t msg_len;
    sdfed_code code;
    sdfed_error err = {0};
    s->log[0] = '\0';
    if (sdfed_secure_frame_decode(frame, len, &msg, &msg_len, &code, &err)) {
        if (s->round >= 0) refuse(s, SDFED_CODE_SECAGG_BAD_REQUEST, &err);
        return;
    }
    const int kind = sdfed_secagg_msg_kind_of(msg, msg_len);
    if (s->round < 0) return;             /* a request of a round it left */
    if (asked_again(s, kind + 1)) return; /* each request's answer is the next kind */
    if ((kind == SDFED_SECAGG_MSG_SHARE_REQUEST && leaves(s, SDFED_SECAGG_SHARE)) ||
        (kind == SDFED_SECAGG_MSG_UNMASK_REQUEST && leaves(s, SDFED_SECAGG_UNMASK)))
        return;
    if (kind == SDFED_SECAGG_MSG_SHARE_REQUEST) {
        answer(s, native_secagg_client_share, msg, msg_len, "shares sent");
    } else if (kind == SDFED_SECAGG_MSG_MASKED_REQUEST && s->trained) {
        mask(s, msg, msg_len);
    } else if (kind == SDFED_SECAGG_MSG_MASKED_REQUEST) { /* answered once it has trained */
        free(s->masked_request);
        if ((s->masked_request = malloc(msg_len))) {
            memcpy(s->masked_request, msg, msg_len);
            s->masked_request_len = msg_len;
        }
    } else if (kind == SDFED_SECAGG_MSG_UNMASK_REQUEST) {
        answer(s, native_secagg_client_unmask, msg, msg_len, "unmasking shares sent");
    } else {
        sdfed_fail(&err, SDFED_ERR_FORMAT, "a %s message is no server's request", sdfed_secagg_msg_name(kind));
        refuse(s, SDFED_CODE_SECAGG_BAD_REQUEST, &err);
    }
}

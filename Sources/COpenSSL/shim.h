// OpenSSL 3 (Debian libssl-dev), the project's only TLS and crypto library. OpenSSL defines many calls as macros,
// which Swift does not import; each gets a static inline wrapper here. Linux system calls are in CLinuxShims.
#ifndef REMOTESUPPORT_COPENSSL_SHIM_H
#define REMOTESUPPORT_COPENSSL_SHIM_H

#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>
#include <openssl/evp.h>
#include <openssl/bio.h>

static inline int rs_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}
static inline int rs_SSL_CTX_set_max_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_max_proto_version(ctx, version);
}
static inline long rs_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_mode(ctx, mode); }
static inline int rs_SSL_CTX_set1_groups_list(SSL_CTX *ctx, const char *list) {
    return (int)SSL_CTX_set1_groups_list(ctx, list);
}
static inline long rs_SSL_CTX_set_session_cache_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_session_cache_mode(ctx, mode);
}
static inline int rs_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}
static inline uint64_t rs_SSL_OP_no_compression(void) { return SSL_OP_NO_COMPRESSION; }
static inline uint64_t rs_SSL_OP_no_renegotiation(void) { return SSL_OP_NO_RENEGOTIATION; }
static inline uint64_t rs_SSL_OP_cipher_server_preference(void) { return SSL_OP_CIPHER_SERVER_PREFERENCE; }
static inline uint64_t rs_SSL_OP_no_ticket(void) { return SSL_OP_NO_TICKET; }
static inline long rs_SSL_MODE_release_buffers(void) { return SSL_MODE_RELEASE_BUFFERS; }
static inline long rs_SSL_MODE_partial_write(void) { return SSL_MODE_ENABLE_PARTIAL_WRITE; }
static inline long rs_SSL_MODE_moving_buffer(void) { return SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER; }
static inline long rs_SSL_MODE_no_auto_chain(void) { return SSL_MODE_NO_AUTO_CHAIN; }
static inline int rs_TLS1_2_VERSION(void) { return TLS1_2_VERSION; }
static inline int rs_TLS1_3_VERSION(void) { return TLS1_3_VERSION; }
static inline int rs_SSL_get_ex_new_index(void) { return SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL); }
static inline int rs_SSL_CTX_get_ex_new_index(void) { return SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, NULL); }
static inline int rs_SSL_TLSEXT_ERR_OK(void) { return SSL_TLSEXT_ERR_OK; }
static inline int rs_SSL_TLSEXT_ERR_ALERT_FATAL(void) { return SSL_TLSEXT_ERR_ALERT_FATAL; }
static inline int rs_SSL_TLSEXT_ERR_NOACK(void) { return SSL_TLSEXT_ERR_NOACK; }
static inline int rs_X509_V_OK(void) { return X509_V_OK; }
static inline int rs_X509_V_ERR_APPLICATION_VERIFICATION(void) { return X509_V_ERR_APPLICATION_VERIFICATION; }
static inline void rs_OPENSSL_free(void *pointer) { OPENSSL_free(pointer); }
static inline int rs_SSL_R_UNEXPECTED_EOF_WHILE_READING(void) { return SSL_R_UNEXPECTED_EOF_WHILE_READING; }
static inline int rs_ERR_GET_REASON(unsigned long code) { return ERR_GET_REASON(code); }
static inline int rs_ERR_GET_LIB(unsigned long code) { return ERR_GET_LIB(code); }
static inline int rs_ERR_LIB_SSL(void) { return ERR_LIB_SSL; }
static inline long rs_SSL_CTX_add0_chain_cert(SSL_CTX *ctx, X509 *x509) { return SSL_CTX_add0_chain_cert(ctx, x509); }
static inline long rs_SSL_SESS_CACHE_off(void) { return SSL_SESS_CACHE_OFF; }
static inline int rs_SSL_VERIFY_peer(void) { return SSL_VERIFY_PEER; }
static inline int rs_SSL_VERIFY_fail_if_no_peer_cert(void) { return SSL_VERIFY_FAIL_IF_NO_PEER_CERT; }
static inline int rs_SSL_VERIFY_none(void) { return SSL_VERIFY_NONE; }
static inline int rs_sk_X509_num(const STACK_OF(X509) *stack) { return sk_X509_num(stack); }
static inline X509 *rs_sk_X509_value(const STACK_OF(X509) *stack, int index) { return sk_X509_value(stack, index); }
// A responder refuses a ClientHello without the ALPN extension in the handshake, with alert 120
// no_application_protocol (SPEC §2, errata 1.0.1 no. 12): OpenSSL calls the ALPN select callback only when the
// extension is present, so its absence is checked here, early, on the ClientHello.
static inline int rs_require_alpn_client_hello_cb(SSL *ssl, int *alert, void *arg) {
    (void)arg;
    const unsigned char *data = NULL;
    size_t length = 0;
    if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_application_layer_protocol_negotiation, &data, &length) == 1) {
        return SSL_CLIENT_HELLO_SUCCESS;
    }
    *alert = SSL_AD_NO_APPLICATION_PROTOCOL;
    ERR_raise(ERR_LIB_SSL, SSL_R_NO_APPLICATION_PROTOCOL);
    return SSL_CLIENT_HELLO_ERROR;
}
static inline void rs_SSL_CTX_require_alpn_extension(SSL_CTX *ctx) {
    SSL_CTX_set_client_hello_cb(ctx, rs_require_alpn_client_hello_cb, NULL);
}
// Certificate usage checks for a server's own leaf (extension flags and usage bits are macros).
static inline uint32_t rs_EXFLAG_KUSAGE(void) { return EXFLAG_KUSAGE; }
static inline uint32_t rs_EXFLAG_XKUSAGE(void) { return EXFLAG_XKUSAGE; }
static inline uint32_t rs_EXFLAG_INVALID(void) { return EXFLAG_INVALID; }
static inline uint32_t rs_EXFLAG_CA(void) { return EXFLAG_CA; }
// OPENSSL_init_crypto option: no atexit() cleanup (a process that exits while other threads still use OpenSSL).
static inline uint64_t rs_OPENSSL_INIT_NO_ATEXIT(void) { return OPENSSL_INIT_NO_ATEXIT; }
static inline uint32_t rs_KU_DIGITAL_SIGNATURE(void) { return KU_DIGITAL_SIGNATURE; }
static inline uint32_t rs_KU_KEY_ENCIPHERMENT(void) { return KU_KEY_ENCIPHERMENT; }
static inline uint32_t rs_XKU_SSL_SERVER(void) { return XKU_SSL_SERVER; }
static inline uint32_t rs_XKU_ANYEKU(void) { return XKU_ANYEKU; }

#endif

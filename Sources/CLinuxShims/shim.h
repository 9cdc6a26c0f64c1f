// The Linux-only system interfaces of RemoteSupport's I/O runtime (epoll, eventfd, accept4, prctl, malloc.h), kept
// apart from OpenSSL so that a port to another platform (kqueue on Apple, Bionic on Android) replaces this target and
// the files that use it (docs/porting.md), nothing else.
#ifndef REMOTESUPPORT_CLINUXSHIMS_SHIM_H
#define REMOTESUPPORT_CLINUXSHIMS_SHIM_H

#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <fcntl.h>
#include <errno.h>
#include <unistd.h>
#include <malloc.h>

// Linux: epoll event bits and socket constants Swift imports awkwardly (enum-typed or macro).
static inline uint32_t rs_EPOLLIN(void) { return EPOLLIN; }
static inline uint32_t rs_EPOLLOUT(void) { return EPOLLOUT; }
static inline uint32_t rs_EPOLLERR(void) { return EPOLLERR; }
static inline uint32_t rs_EPOLLHUP(void) { return EPOLLHUP; }
static inline uint32_t rs_EPOLLRDHUP(void) { return EPOLLRDHUP; }
static inline uint32_t rs_EPOLLET(void) { return EPOLLET; }
static inline int rs_SOCK_STREAM_NONBLOCK_CLOEXEC(void) { return SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC; }
static inline int rs_errno(void) { return errno; }
// accept4 is declared by glibc only under _GNU_SOURCE, which a module header cannot set reliably.
extern int accept4(int fd, struct sockaddr *address, socklen_t *length, int flags);
static inline int rs_accept_nonblocking(int fd) { return accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC); }

// The calling thread's kernel name (what `ps -L` shows; at most 15 bytes). prctl is variadic, which Swift cannot call.
#include <sys/prctl.h>
static inline int rs_set_thread_name(const char *name) { return prctl(PR_SET_NAME, name, 0, 0, 0); }

// The calling thread's nice value (Linux: per thread, by its kernel id; raising it needs no privilege).
#include <sys/syscall.h>
static inline int rs_set_thread_nice(int nice) {
    return setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice);
}

#endif

#!/bin/sh
# SPDX-License-Identifier: MIT
# No allocation path calls a libc function that is a cancellation point (issue 24): the
# library's undefined symbols against POSIX's cancellation points (XSH 2.9.5.2: those that
# shall be, and those that may be) and glibc's own names for them. A cancellation inside one
# while a lock is held would leave the lock held for good; one on malloc's path would make
# malloc a cancellation point. Every file operation of the allocator is the system call
# itself (src/common/os.c).
#
#   t_cancel_points.sh <nm> <libaxmalloc.so> <libaxmalloc.a>
#
# Allowed, with the reason:
#   fprintf fwrite   malloc_info(options, FILE *) writes to the caller's stream with the
#                    caller's stdio, as glibc's malloc_info does, holding none of our locks
#                    (its figures are read first: override.c)
#   fflush           the leak checker at exit, when it found leaks: the program's buffered
#                    output is flushed before _exit with the leak exit code, cancellation
#                    disabled first, holding none of our locks (leak.c)
set -u
NM=$1
shift
points='accept accept4 aio_suspend clock_nanosleep close connect creat fcntl fcntl64 fdatasync
fsync getmsg getpmsg lockf lockf64 mq_receive mq_send mq_timedreceive mq_timedsend msgrcv msgsnd
msync nanosleep open open64 openat openat64 pause poll ppoll pread pread64 preadv pselect
pthread_cond_clockwait pthread_cond_timedwait pthread_cond_wait pthread_join pthread_clockjoin_np
pthread_timedjoin_np pthread_testcancel putmsg putpmsg pwrite pwrite64 pwritev read readv recv
recvfrom recvmsg recvmmsg select sem_clockwait sem_timedwait sem_wait send sendmsg sendmmsg
sendto sigpause sigsuspend sigtimedwait sigwait sigwaitinfo sleep system tcdrain usleep wait
wait3 wait4 waitid waitpid write writev __open_2 __open64_2 __openat_2 __read_chk __pread_chk
__libc_open __libc_read __libc_write
catclose catgets catopen chmod chown closedir closelog ctermid dbm_close dbm_delete dbm_fetch
dbm_nextkey dbm_open dbm_store dlclose dlopen dprintf endgrent endhostent endnetent endprotoent
endpwent endservent endutxent faccessat fchmod fchmodat fchown fchownat fclose fflush fgetc
fgetpos fgets fgetwc fgetws fmtmsg fopen fopen64 fpathconf fprintf fputc fputs fputwc fputws
fread freopen fscanf fseek fseeko fsetpos fstat fstatat ftell ftello ftw futimens fwprintf fwrite
fwscanf getaddrinfo getc getc_unlocked getchar getchar_unlocked getcwd getdate getdelim getgrent
getgrgid getgrgid_r getgrnam getgrnam_r gethostent gethostid gethostname getline getlogin
getlogin_r getnameinfo getnetbyaddr getnetbyname getnetent getopt getprotobyname
getprotobynumber getprotoent getpwent getpwnam getpwnam_r getpwuid getpwuid_r gets getservbyname
getservbyport getservent getutxent getutxid getutxline getwc getwchar glob iconv_close iconv_open
ioctl link linkat lio_listio localtime localtime_r lockf lseek lseek64 lstat mkdir mkdirat
mkdtemp mkfifo mkfifoat mknod mknodat mkstemp mktime nftw opendir openlog pathconf pclose
perror popen posix_fadvise posix_fallocate posix_madvise posix_openpt posix_spawn posix_spawnp
posix_trace_clear posix_typed_mem_open printf psiginfo psignal pthread_rwlock_rdlock
pthread_rwlock_timedrdlock pthread_rwlock_timedwrlock pthread_rwlock_wrlock ptsname putc
putc_unlocked putchar putchar_unlocked puts pututxline putwc putwchar readdir readdir_r readlink
readlinkat remove rename renameat rewind rewinddir scandir scanf seekdir semop setgrent
sethostent setnetent setprotoent setpwent setservent setutxent sigpause stat strerror strerror_r
strftime symlink symlinkat sync syslog tmpfile tmpnam ttyname ttyname_r tzset ungetc ungetwc
unlink unlinkat utime utimensat utimes vdprintf vfprintf vfwprintf vprintf vwprintf wcsftime
wordexp wprintf wscanf'
allowed='fprintf fwrite fflush'
fail=0
for lib in "$@"; do
  syms=$("$NM" -u "$lib" 2>/dev/null | awk '{print $NF}' | sed 's/@.*//' | sort -u)
  [ -n "$syms" ] || { echo "t_cancel_points: no undefined symbols read from $lib" >&2; exit 1; }
  for s in $syms; do
    case " $(echo $points) " in *" $s "*) ;; *) continue ;; esac
    case " $allowed " in
      *" $s "*) echo "$lib: $s (allowed)" ;;
      *) echo "t_cancel_points: $lib calls $s, a cancellation point" >&2; fail=1 ;;
    esac
  done
done
[ $fail = 0 ] && echo "t_cancel_points: no cancellation point in the allocator but the allowed ones"
exit $fail

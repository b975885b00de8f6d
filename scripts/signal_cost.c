// What a signal per period costs a thread before any profiler work: a loop of arithmetic run for
// 3 s of its CPU time with no sampling (mode 0), with a task-clock perf event signalling an empty
// SIGPROF handler every 1 ms of its CPU time (mode 1, what PROF_CPU_SAMPLE=1000 arms by default),
// and with a POSIX CPU-time timer of 1 ms (mode 2, PROF_CPU_SAMPLE_CLOCK=posix). The loop's
// count per mode is its throughput; the difference is the kernel's (and a VM's) price of the
// signals. docs/overhead.md has the figures.
//
//   gcc -D_GNU_SOURCE -O1 -include sys/ioctl.h scripts/signal_cost.c -o /tmp/signal_cost
//   for m in 0 1 2 0 1 2; do /tmp/signal_cost $m; done
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static volatile long n;
static void h(int s, siginfo_t* i, void* c){ n++; }
static double now(){struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t); return t.tv_sec+t.tv_nsec/1e9;}
int main(int argc,char**argv){
  int mode=atoi(argv[1]); // 0 none, 1 perf, 2 posix timer
  struct sigaction sa; memset(&sa,0,sizeof sa); sa.sa_sigaction=h; sa.sa_flags=SA_SIGINFO|SA_RESTART; sigaction(SIGPROF,&sa,0);
  if(mode==1){
  struct perf_event_attr a; memset(&a,0,sizeof a); a.type=PERF_TYPE_SOFTWARE; a.size=sizeof a; a.config=PERF_COUNT_SW_TASK_CLOCK;
  a.sample_period=1000000; a.wakeup_events=1; a.exclude_kernel=1; a.exclude_hv=1; a.disabled=1;
  int fd=syscall(SYS_perf_event_open,&a,0,-1,-1,PERF_FLAG_FD_CLOEXEC);
  fcntl(fd,F_SETFL,O_ASYNC); fcntl(fd,F_SETSIG,SIGPROF); struct f_owner_ex o={F_OWNER_TID,syscall(SYS_gettid)}; fcntl(fd,F_SETOWN_EX,&o);
  ioctl(fd,PERF_EVENT_IOC_ENABLE,0);
  } else if(mode==2){
    timer_t t; struct sigevent ev; memset(&ev,0,sizeof ev); ev.sigev_notify=SIGEV_THREAD_ID; ev.sigev_signo=SIGPROF; ev._sigev_un._tid=syscall(SYS_gettid);
    timer_create(CLOCK_THREAD_CPUTIME_ID,&ev,&t); struct itimerspec it={{0,1000000},{0,1000000}}; timer_settime(t,0,&it,0);
  }
  double t0=now(); volatile double x=0; long iters=0;
  while(now()-t0<3){ for(int i=0;i<10000;i++) x+=i*0.5; iters++; }
  printf("mode %d: %ld iters in 3 s cpu, %ld signals\n",mode,iters,n);
}

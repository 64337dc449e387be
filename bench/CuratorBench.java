/*
 * CuratorBench: the Apache Curator worker of the zkr benchmark. Same command
 * line, modes, synchronisation files and output as bench/driver.c (read its
 * header comment), with Curator 5.4's InterProcessMutex (s5: its
 * InterProcessReadWriteLock, s6: its InterProcessSemaphoreV2; s7, lead and
 * --recipe election: its LeaderLatch, acquire being start() and await(),
 * release close(); s8: its InterProcessMultiLock over the set's paths in
 * sorted order, or with --take sorted one InterProcessMutex per path taken
 * in sorted order and released in reverse):
 *
 *   java -cp BUILD:JARS CuratorBench MODE --servers HOSTS --path PATH [...]
 *
 * Every contender is an InterProcessMutex on a CuratorFramework built with
 * the defaults except the session timeout (and ExponentialBackoffRetry, which
 * the builder requires). Blocking acquire() only: Curator has no
 * asynchronous acquisition, so s4wait runs a thread per waiter.
 */

import java.io.FileWriter;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessMultiLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.KeeperException;

public final class CuratorBench {
  static String servers, path, outFile, syncDir, locks = "1000,10000";
  static String id = "0";
  static long cycles = 2000, durationMs = 10000, warmup = 0, sessions = 1,
      waiters = 1000, sessionMs = 10000;
  static PrintWriter out;

  static void die(String msg) {
    System.err.println("curator-bench: " + msg);
    System.err.flush();
    Runtime.getRuntime().halt(1);
  }

  static CuratorFramework connect() throws InterruptedException {
    CuratorFramework c = CuratorFrameworkFactory.builder()
                             .connectString(servers)
                             .sessionTimeoutMs((int) sessionMs)
                             .connectionTimeoutMs(30000)
                             .retryPolicy(new ExponentialBackoffRetry(100, 3))
                             .build();
    c.start();
    if (!c.blockUntilConnected(30, TimeUnit.SECONDS))
      die("no connection to " + servers + " within 30 s");
    return c;
  }

  static void touch(String what) throws IOException {
    if (syncDir == null)
      return;
    Path p = Paths.get(syncDir, what + "." + id);
    Path tmp = Paths.get(syncDir, what + "." + id + ".tmp");
    Files.write(tmp, new byte[0]);
    Files.move(tmp, p, StandardCopyOption.ATOMIC_MOVE);
  }

  static long waitFor(String name) throws Exception {
    if (syncDir == null)
      return System.nanoTime();
    Path p = Paths.get(syncDir, name);
    while (!Files.exists(p))
      Thread.sleep(5);
    String s = new String(Files.readAllBytes(p), StandardCharsets.US_ASCII)
                   .trim();
    return s.isEmpty() ? 0 : Long.parseLong(s);
  }

  static void sleepUntil(long t) throws InterruptedException {
    long d;
    while ((d = t - System.nanoTime()) > 0)
      Thread.sleep(d / 1000000, (int) (d % 1000000));
  }

  /* the timed modes' start: ready, wait for the go time T0, sleep until
   * it; returns the end of the window, T0 + durationMs */
  static long window() throws Exception {
    touch("ready");
    long t0 = waitFor("go");
    sleepUntil(t0);
    return t0 + durationMs * 1000000L;
  }

  static long rssKb() throws IOException {
    for (String l : Files.readAllLines(Paths.get("/proc/self/status")))
      if (l.startsWith("VmRSS:"))
        return Long.parseLong(l.replaceAll("[^0-9]", ""));
    return -1;
  }

  static int countChildren(CuratorFramework c, String p) throws Exception {
    try {
      return c.getChildren().forPath(p).size();
    } catch (KeeperException.NoNodeException e) {
      return 0;
    }
  }

  /* a contender of hold, herd, s7 and lead: the mutex, or (--recipe
   * election) a LeaderLatch: acquire joins and awaits the leadership,
   * release leaves (close() deletes the latch's node) */
  static boolean election = false;
  interface Contender {
    void acquire() throws Exception;
    void release() throws Exception;
  }
  static Contender contender(CuratorFramework c, String p) {
    if (!election) {
      final InterProcessMutex m = new InterProcessMutex(c, p);
      return new Contender() {
        public void acquire() throws Exception { m.acquire(); }
        public void release() throws Exception { m.release(); }
      };
    }
    return new Contender() {
      LeaderLatch l;
      public void acquire() throws Exception {
        l = new LeaderLatch(c, p, id);
        l.start();
        l.await();
      }
      public void release() throws Exception {
        l.close();
        l = null;
      }
    };
  }

  /* s7: terms of the election from T0 until T0 + durationMs */
  static void s7() throws Exception {
    election = true;
    CuratorFramework c = connect();
    cycles(c, contender(c, path));
  }

  /* lead: be elected once, say so, stay leader until the end file */
  static void lead() throws Exception {
    election = true;
    CuratorFramework c = connect();
    Contender e = contender(c, path);
    touch("ready");
    e.acquire();
    out.println("elected " + System.nanoTime());
    out.flush();
    touch("elected");
    waitFor("end");
    e.release();
    c.close();
  }

  static void cycle(InterProcessMutex m) throws Exception {
    m.acquire();
    m.release();
  }

  static void s1() throws Exception {
    CuratorFramework c = connect();
    InterProcessMutex m = new InterProcessMutex(c, path);
    for (long i = 0; i < warmup; i++)
      cycle(m);
    long[] t = new long[(int) cycles];
    touch("ready");
    waitFor("go");
    for (int i = 0; i < cycles; i++) {
      long t0 = System.nanoTime();
      cycle(m);
      t[i] = System.nanoTime() - t0;
    }
    touch("done");
    for (long v : t)
      out.println("sample " + v);
    waitFor("end");
    c.close();
  }

  /* s5: the read-write lock (InterProcessReadWriteLock), each operation a
   * read with probability readPermille/1000, held for holdUs */
  static long readPermille = 900, holdUs = 0;

  static void s5() throws Exception {
    CuratorFramework c = connect();
    InterProcessReadWriteLock rw = new InterProcessReadWriteLock(c, path);
    java.util.Random rnd = new java.util.Random(Long.parseLong(id) * 7919 + 1);
    StringBuilder sb = new StringBuilder();
    long end = window();
    for (;;) {
      long treq = System.nanoTime();
      if (treq >= end)
        break;
      boolean reading = rnd.nextInt(1000) < readPermille;
      InterProcessMutex m = reading ? rw.readLock() : rw.writeLock();
      m.acquire();
      long tacq = System.nanoTime();
      if (holdUs > 0)
        sleepUntil(tacq + holdUs * 1000L);
      long trel = System.nanoTime();
      m.release();
      sb.append("op ").append(reading ? 'R' : 'W').append(' ').append(treq)
          .append(' ').append(tacq).append(' ').append(trel).append('\n');
    }
    touch("done");
    out.print(sb);
    waitFor("end");
    c.close();
  }

  /* s6: the counting semaphore (InterProcessSemaphoreV2) with limit
   * leases, one lease per acquisition, held for holdUs */
  static long limit = 2;

  static void s6() throws Exception {
    CuratorFramework c = connect();
    final InterProcessSemaphoreV2 sem =
        new InterProcessSemaphoreV2(c, path, (int) limit);
    cycles(c, new Contender() {
      Lease lease;
      public void acquire() throws Exception { lease = sem.acquire(); }
      public void release() throws Exception {
        lease.close();
        lease = null;
      }
    });
  }

  /* s6 and s7: acquire, hold holdUs, release, from T0 until T0 +
   * durationMs; "acq T_REQ T_ACQ T_REL" per cycle */
  static void cycles(CuratorFramework c, Contender e) throws Exception {
    StringBuilder sb = new StringBuilder();
    long end = window();
    for (;;) {
      long treq = System.nanoTime();
      if (treq >= end)
        break;
      e.acquire();
      long tacq = System.nanoTime();
      if (holdUs > 0)
        sleepUntil(tacq + holdUs * 1000L);
      long trel = System.nanoTime();
      e.release();
      sb.append("acq ").append(treq).append(' ').append(tacq).append(' ')
          .append(trel).append('\n');
    }
    touch("done");
    out.print(sb);
    waitFor("end");
    c.close();
  }

  /* s8: --set distinct locks drawn at random among the --keys paths
   * PATH/k00 .. PATH/k(K-1), all taken, held holdUs, released; "set T_REQ
   * T_ACQ T_REL MASK" per operation (bench/driver.c's s8) */
  static long keys = 8, setSize = 2;
  static boolean sorted = false; /* --take sorted */

  static String keyPath(String base, int k) {
    return String.format("%s/k%02d", base, k);
  }

  /* the contender of the keys of mask: the InterProcessMultiLock over
   * their paths in sorted order (made on first use), or (--take sorted)
   * the mutexes of the keys in that order, released in reverse */
  static Contender s8Set(CuratorFramework c, String base, Contender[] sets,
                         InterProcessMutex[] mutexes, int mask) {
    if (sets[mask] != null)
      return sets[mask];
    final List<String> paths = new ArrayList<>();
    final List<InterProcessMutex> ms = new ArrayList<>();
    for (int k = 0; k < keys; k++)
      if ((mask & (1 << k)) != 0) {
        paths.add(keyPath(base, k));
        if (sorted) {
          if (mutexes[k] == null)
            mutexes[k] = new InterProcessMutex(c, keyPath(base, k));
          ms.add(mutexes[k]);
        }
      }
    java.util.Collections.sort(paths);
    if (!sorted) {
      final InterProcessMultiLock ml = new InterProcessMultiLock(c, paths);
      sets[mask] = new Contender() {
        public void acquire() throws Exception { ml.acquire(); }
        public void release() throws Exception { ml.release(); }
      };
    } else {
      sets[mask] = new Contender() {
        public void acquire() throws Exception {
          for (InterProcessMutex m : ms)
            m.acquire();
        }
        public void release() throws Exception {
          for (int i = ms.size() - 1; i >= 0; i--)
            ms.get(i).release();
        }
      };
    }
    return sets[mask];
  }

  static int s8Draw(java.util.Random rnd) {
    int[] idx = new int[(int) keys];
    for (int k = 0; k < keys; k++)
      idx[k] = k;
    int mask = 0;
    for (int i = 0; i < setSize; i++) {
      int j = i + rnd.nextInt((int) keys - i);
      int t = idx[i];
      idx[i] = idx[j];
      idx[j] = t;
      mask |= 1 << idx[i];
    }
    return mask;
  }

  static void s8() throws Exception {
    if (keys < 2 || keys > 16 || setSize < 1 || setSize > keys)
      die("s8: --keys 2..16 and --set 1..K");
    CuratorFramework c = connect();
    java.util.Random rnd = new java.util.Random(Long.parseLong(id) * 7919 + 1);
    String wbase = path + "-w" + id;
    Contender[] wsets = new Contender[1 << keys];
    InterProcessMutex[] wmutexes = new InterProcessMutex[(int) keys];
    for (long i = 0; i < warmup; i++) {
      Contender e = s8Set(c, wbase, wsets, wmutexes, s8Draw(rnd));
      e.acquire();
      e.release();
    }
    Contender[] sets = new Contender[1 << keys];
    InterProcessMutex[] mutexes = new InterProcessMutex[(int) keys];
    StringBuilder sb = new StringBuilder();
    long end = window();
    long cpu0 = processCpuNs();
    for (;;) {
      int mask = s8Draw(rnd);
      long treq = System.nanoTime();
      if (treq >= end)
        break;
      Contender e = s8Set(c, path, sets, mutexes, mask);
      e.acquire();
      long tacq = System.nanoTime();
      if (holdUs > 0)
        sleepUntil(tacq + holdUs * 1000L);
      long trel = System.nanoTime();
      e.release();
      sb.append("set ").append(treq).append(' ').append(tacq).append(' ')
          .append(trel).append(' ').append(mask).append('\n');
    }
    long cpu = processCpuNs() - cpu0;
    touch("done");
    out.print(sb);
    if (cpu >= 0)
      out.println("cpu_us " + cpu / 1000);
    waitFor("end");
    c.close();
  }

  /* The CPU the JVM used so far, all its threads (JIT and GC included),
   * in ns; -1 if the JVM cannot say. */
  static long processCpuNs() {
    java.lang.management.OperatingSystemMXBean os =
        java.lang.management.ManagementFactory.getOperatingSystemMXBean();
    if (os instanceof com.sun.management.OperatingSystemMXBean)
      return ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime();
    return -1;
  }

  static void s2() throws Exception {
    CuratorFramework c = connect();
    InterProcessMutex w = new InterProcessMutex(c, path + "-w" + id);
    for (long i = 0; i < warmup; i++)
      cycle(w);
    InterProcessMutex m = new InterProcessMutex(c, path);
    long[] t = new long[1 << 16];
    int n = 0;
    long end = window();
    long cpu0 = processCpuNs();
    for (;;) {
      long treq = System.nanoTime();
      if (treq >= end)
        break;
      m.acquire();
      long tacq = System.nanoTime();
      m.release();
      if (2 * n + 2 > t.length)
        t = java.util.Arrays.copyOf(t, t.length * 2);
      t[2 * n] = treq;
      t[2 * n + 1] = tacq;
      n++;
    }
    long cpu = processCpuNs() - cpu0;
    touch("done");
    for (int i = 0; i < n; i++)
      out.println("acq " + t[2 * i] + " " + t[2 * i + 1]);
    if (cpu >= 0)
      out.println("cpu_us " + cpu / 1000);
    waitFor("end");
    c.close();
  }

  static void hold() throws Exception {
    CuratorFramework c = connect();
    Contender m = contender(c, path);
    m.acquire();
    touch("ready");
    waitFor("go");
    long t = System.nanoTime();
    m.release();
    touch("done");
    out.println("release " + t);
    waitFor("end");
    c.close();
  }

  static void herd() throws Exception {
    int k = (int) sessions;
    List<CuratorFramework> cs = new ArrayList<>();
    for (int i = 0; i < k; i++)
      cs.add(connect());
    long[] tacq = new long[k];
    AtomicInteger failed = new AtomicInteger();
    CountDownLatch started = new CountDownLatch(k);
    CountDownLatch finished = new CountDownLatch(k);
    for (int i = 0; i < k; i++) {
      final int j = i;
      final Contender m = contender(cs.get(i), path);
      Thread th = new Thread(() -> {
        started.countDown();
        try {
          m.acquire();
          tacq[j] = System.nanoTime();
          m.release();
        } catch (Exception e) {
          System.err.println("curator-bench: waiter " + j + ": " + e);
          failed.incrementAndGet();
        }
        finished.countDown();
      });
      th.setDaemon(true);
      th.start();
    }
    started.await();
    touch("ready");
    finished.await();
    touch("done");
    for (int i = 0; i < k; i++)
      if (tacq[i] != 0)
        out.println("acq " + tacq[i]);
    waitFor("end");
    for (CuratorFramework c : cs)
      c.close();
    if (failed.get() > 0)
      die(failed.get() + " waiters failed");
  }

  static void s4held() throws Exception {
    CuratorFramework c = connect();
    cycle(new InterProcessMutex(c, path + "/warm"));
    System.gc();
    out.println("rss_base " + rssKb());
    List<InterProcessMutex> held = new ArrayList<>();
    long t0 = System.nanoTime();
    int n = 0;
    for (String mark : locks.split(",")) {
      int upto = Integer.parseInt(mark);
      for (; n < upto; n++) {
        InterProcessMutex m = new InterProcessMutex(c, path + "/l" + n);
        m.acquire();
        held.add(m);
      }
      System.gc();
      out.println("rss " + n + " " + rssKb());
    }
    out.println("elapsed_ns " + (System.nanoTime() - t0));
    out.flush();
    c.close();
  }

  static void s4wait() throws Exception {
    CuratorFramework c = connect();
    cycle(new InterProcessMutex(c, path + "-warm"));
    InterProcessMutex holder = new InterProcessMutex(c, path);
    holder.acquire();
    countChildren(c, path);
    System.gc();
    out.println("rss_base " + rssKb());
    AtomicInteger failed = new AtomicInteger();
    for (int i = 0; i < waiters; i++) {
      final InterProcessMutex m = new InterProcessMutex(c, path);
      Thread th = new Thread(() -> {
        try {
          m.acquire();
        } catch (Exception e) {
          failed.incrementAndGet();
        }
      });
      th.setDaemon(true);
      th.start();
    }
    long deadline = System.nanoTime() + 120_000_000_000L;
    int n;
    while ((n = countChildren(c, path)) < waiters + 1) {
      if (System.nanoTime() > deadline)
        die("only " + n + " contenders queued after 120 s");
      Thread.sleep(100);
    }
    Thread.sleep(1000);
    if (failed.get() > 0)
      die(failed.get() + " waiters failed");
    System.gc();
    out.println("rss_waiters " + waiters + " " + rssKb());
    out.flush();
    out.close();
    Runtime.getRuntime().halt(0);
  }

  public static void main(String[] args) throws Exception {
    if (args.length < 1)
      die("usage: CuratorBench MODE --servers HOSTS --path PATH [...]");
    String mode = args[0];
    for (int i = 1; i + 1 < args.length; i += 2) {
      String a = args[i], v = args[i + 1];
      switch (a) {
      case "--servers": servers = v; break;
      case "--path": path = v; break;
      case "--out": outFile = v; break;
      case "--sync": syncDir = v; break;
      case "--id": id = v; break;
      case "--locks": locks = v; break;
      case "--cycles": cycles = Long.parseLong(v); break;
      case "--duration-ms": durationMs = Long.parseLong(v); break;
      case "--warmup": warmup = Long.parseLong(v); break;
      case "--sessions": sessions = Long.parseLong(v); break;
      case "--waiters": waiters = Long.parseLong(v); break;
      case "--session-ms": sessionMs = Long.parseLong(v); break;
      case "--read-permille": readPermille = Long.parseLong(v); break;
      case "--hold-us": holdUs = Long.parseLong(v); break;
      case "--limit": limit = Long.parseLong(v); break;
      case "--keys": keys = Long.parseLong(v); break;
      case "--set": setSize = Long.parseLong(v); break;
      case "--take":
        if (!v.equals("multi") && !v.equals("sorted"))
          die("--take multi|sorted");
        sorted = v.equals("sorted");
        break;
      case "--recipe":
        if (!v.equals("lock") && !v.equals("election"))
          die("--recipe lock|election");
        election = v.equals("election");
        break;
      default: die("unknown option " + a);
      }
    }
    if (servers == null || path == null)
      die("--servers and --path are required");
    out = outFile == null ? new PrintWriter(System.out)
                          : new PrintWriter(new FileWriter(outFile));
    try {
      switch (mode) {
      case "s1": s1(); break;
      case "s2": s2(); break;
      case "s5": s5(); break;
      case "s6": s6(); break;
      case "s7": s7(); break;
      case "s8": s8(); break;
      case "lead": lead(); break;
      case "hold": hold(); break;
      case "herd": herd(); break;
      case "s4held": s4held(); break;
      case "s4wait": s4wait(); break;
      default: die("unknown mode " + mode);
      }
    } catch (Exception e) {
      e.printStackTrace();
      die(mode + ": " + e);
    }
    out.flush();
    if (out.checkError())
      die("cannot write the output");
    out.close();
    System.exit(0);
  }
}

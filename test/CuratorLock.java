/*
 * CuratorLock: one contending process for the zkr/Curator interoperability
 * tests, the Java twin of test/lockworker.c, using Apache Curator's
 * InterProcessMutex (or InterProcessReadWriteLock, or
 * InterProcessSemaphoreV2) on the same lock path.
 *
 *   java -cp DIR:JARS CuratorLock --servers HOSTS --path PATH [options]
 *     --iterations N      acquire/release N times (default 1)
 *     --hold-ms MS        hold each time for MS (default 10)
 *     --timeout-ms MS     acquire timeout (default -1: no limit)
 *     --session-ms MS     session timeout (default 10000)
 *     --log FILE          append "ACQ pid seq token t_ms" / "REL ..." lines
 *                         (t_ms: System.nanoTime(), which is CLOCK_MONOTONIC
 *                         on Linux, so it compares with lockworker's)
 *     --resource FILE     the shared resource: while holding, create
 *                         FILE.holder with O_EXCL (an existing one means
 *                         two holders at once: exit 3), remove it before
 *                         releasing
 *     --hold-forever      acquire once, print "HELD <node> <token>" on
 *                         stdout, then every 10 ms append "TOUCH pid t_ms"
 *                         to --log while the lock is held; when it is not
 *                         (connection SUSPENDED or LOST, or our node
 *                         deleted) print "LOST" and exit 75
 *     --id TEXT           contender id stored in the node (default: Curator's,
 *                         the local address)
 *     --recipe R          mutex (default); read or write: that side of
 *                         InterProcessReadWriteLock; mixed: each iteration
 *                         reads with probability 0.8. With --resource, the
 *                         same overlap check as lockworker's (a reader
 *                         creates FILE.r.<pid> and checks FILE.holder; a
 *                         writer creates FILE.holder and checks FILE.r.*);
 *                         ACQ lines end with R or W and the readers inside.
 *                         semaphore: InterProcessSemaphoreV2 with limit
 *                         --permits, one lease per acquisition; with
 *                         --resource, lockworker's check (create
 *                         FILE.lease.<pid>, count FILE.lease.*: more than
 *                         the limit is an overlap); ACQ/REL lines end with
 *                         S, ACQ lines then give the leases inside; at exit
 *                         "MAX n" on stdout and "MAX pid n" in --log. Held
 *                         forever, the loss check runs right before each
 *                         TOUCH (Curator's semaphore tells its holder
 *                         nothing: a connection listener and a watch on the
 *                         lease node do)
 *     --permits N         the semaphore's limit (default 1)
 *                         latch: Curator's LeaderLatch; each iteration is
 *                         one term: a new LeaderLatch (id --id, else ""),
 *                         start(), await(--timeout-ms), then lockworker's
 *                         term: "ACQ pid seq token t_ms L" (token: the
 *                         czxid of getOurPath()), every 10 ms for --hold-ms
 *                         check hasLeadership() and write "TOUCH pid token
 *                         t_ms" while it leads, "REL ... L", then close()
 *                         (Curator has no resign: --end resign and free
 *                         both close the latch; the next term starts a new
 *                         one). With --resource, the O_EXCL FILE.holder
 *                         check. No longer leading: "LOST pid token t_ms",
 *                         "LOST" on stdout, exit 75. Held forever: lead
 *                         once, "HELD <node> <token>", TOUCH while leading.
 *                         selector: Curator's LeaderSelector with
 *                         autoRequeue(); each takeLeadership() is one term
 *                         (lines end with E; the node is the selector's
 *                         mutex node); closed after --iterations terms.
 *                         For both, "SESSION <id in hex>" is printed first.
 *     --end resign|free   accepted for lockworker's sake (see latch)
 *     --release-file FILE (latch, selector) end each term only once FILE
 *                         exists as well, as lockworker does; (mutex,
 *                         read, write, mixed) the same for each hold
 *     --wait-file FILE    (not in lockworker) connect first, print "READY"
 *                         on stdout, then wait until FILE exists before the
 *                         first acquire: the test starts the JVM early and
 *                         queues it on cue
 * seq is the trailing 10 digits of Curator's own lock node (getLockPath());
 * token is that node's czxid, read with one exists() after acquiring (zkr's
 * fencing token), -1 if it cannot be read.
 * Exit: 0 done, 1 acquire failed, 3 overlap seen, 75 lock lost, 64 usage.
 *
 * Curator's and ZooKeeper's logging: put slf4j-nop.jar on the class path.
 */

import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.lang.reflect.Method;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.CuratorWatcher;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.data.Stat;

public final class CuratorLock {
  /* InterProcessMutex keeps the node of the owning thread's acquisition in
   * getLockPath(), which is protected: expose it. */
  static final class Mutex extends InterProcessMutex {
    private final byte[] data;

    Mutex(CuratorFramework client, String path, byte[] data) {
      super(client, path);
      this.data = data;
    }

    String node() {
      return getLockPath();
    }

    @Override
    protected byte[] getLockNodeBytes() {
      return data; /* null: Curator's default */
    }
  }

  private static volatile boolean lost;

  /* getLockPath() of any InterProcessMutex (the read-write lock's halves
   * are ones too), which is protected */
  private static String lockPath(InterProcessMutex m) {
    try {
      Method g = InterProcessMutex.class.getDeclaredMethod("getLockPath");
      g.setAccessible(true);
      return (String) g.invoke(m);
    } catch (Exception e) {
      return null;
    }
  }

  /* how many "<base>.r.*" files are beside @res */
  private static int readersInside(String res) {
    return filesInside(res, ".r.");
  }

  /* how many "<base><suffix>*" files are beside @res */
  private static int filesInside(String res, String suffix) {
    Path p = Paths.get(res).toAbsolutePath();
    String prefix = p.getFileName().toString() + suffix;
    try (Stream<Path> s = Files.list(p.getParent())) {
      return (int) s.filter(f -> f.getFileName().toString().startsWith(prefix))
          .count();
    } catch (IOException e) {
      return -1;
    }
  }

  private static long nowMs() {
    return System.nanoTime() / 1000000L;
  }

  private static long pid() {
    return ProcessHandle.current().pid();
  }

  /* one write(2) on an O_APPEND descriptor: lines of concurrent writers
   * never interleave */
  private static void append(String file, String line) {
    if (file == null)
      return;
    try (FileOutputStream out = new FileOutputStream(file, true)) {
      out.write(line.getBytes(StandardCharsets.US_ASCII));
    } catch (IOException e) {
      /* like lockworker: ignore */
    }
  }

  private static int seqOf(String node) {
    if (node == null || node.length() < 10)
      return -1;
    try {
      return Integer.parseInt(node.substring(node.length() - 10));
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  private static void usage() {
    System.err.println("usage: CuratorLock --servers HOSTS --path PATH"
        + " [--iterations N] [--hold-ms MS] [--timeout-ms MS]"
        + " [--session-ms MS] [--log FILE] [--resource FILE]"
        + " [--hold-forever] [--id TEXT] [--wait-file FILE]"
        + " [--recipe mutex|read|write|mixed|semaphore|latch|selector]"
        + " [--permits N] [--end resign|free] [--release-file FILE]");
    System.exit(64);
  }

  private static long num(String v) {
    try {
      return Long.parseLong(v);
    } catch (NumberFormatException e) {
      usage();
      return 0;
    }
  }

  /* Watch our own node while holding it forever: its deletion is a loss. */
  private static void watchNode(CuratorFramework client, String node)
      throws Exception {
    CuratorWatcher w = new CuratorWatcher() {
      @Override
      public void process(WatchedEvent ev) throws Exception {
        if (ev.getType() == Watcher.Event.EventType.NodeDeleted)
          lost = true;
        else if (ev.getType() != Watcher.Event.EventType.None)
          watchNode(client, node);
      }
    };
    if (client.checkExists().usingWatcher(w).forPath(node) == null)
      lost = true;
  }

  /* --recipe semaphore: @iterations acquisitions of one lease each (or one
   * held forever); returns the exit status */
  private static int runSemaphore(CuratorFramework client, String path,
      int permits, String id, long iterations, long holdMs, long timeoutMs,
      boolean forever, String logf, String res) throws Exception {
    InterProcessSemaphoreV2 sem = new InterProcessSemaphoreV2(client, path,
        permits);
    if (id != null)
      sem.setNodeData(id.getBytes(StandardCharsets.UTF_8));
    Path mine = res == null ? null : Paths.get(res + ".lease." + pid());
    int status = 0, maxInside = 0;
    for (long it = 0; it < (forever ? 1 : iterations); it++) {
      Lease lease;
      try {
        lease = timeoutMs < 0 ? sem.acquire()
            : sem.acquire(timeoutMs, TimeUnit.MILLISECONDS);
      } catch (Exception e) {
        System.err.println("CuratorLock " + pid() + ": acquire: " + e);
        status = 1;
        break;
      }
      if (lease == null) {
        System.err.println("CuratorLock " + pid() + ": acquire: timed out");
        status = 1;
        break;
      }
      /* getNodeName() is the lease node's name (or path) */
      String node = lease.getNodeName();
      if (!node.startsWith("/"))
        node = path + "/leases/" + node;
      long token = -1;
      try {
        Stat st = client.checkExists().forPath(node);
        if (st != null)
          token = st.getCzxid();
      } catch (Exception e) {
        /* token stays -1 */
      }
      int inside = 0;
      boolean overlap = false;
      if (mine != null) {
        /* first announce, then count, as lockworker does */
        try {
          Files.createFile(mine);
        } catch (FileAlreadyExistsException e) {
          /* left from an earlier iteration: still ours */
        }
        inside = filesInside(res, ".lease.");
        overlap = inside > permits;
        maxInside = Math.max(maxInside, inside);
      }
      append(logf, "ACQ " + pid() + " " + seqOf(node) + " " + token + " "
          + nowMs() + " S " + inside + "\n");
      if (overlap) {
        System.err.println("CuratorLock " + pid() + ": OVERLAP: " + inside
            + " leases inside, limit " + permits);
        status = 3;
        break;
      }
      if (forever) {
        System.out.println("HELD " + node + " " + token);
        System.out.flush();
        watchNode(client, node);
        try (FileOutputStream out = logf == null ? null
            : new FileOutputStream(logf, true)) {
          for (;;) {
            byte[] line = ("TOUCH " + pid() + " " + nowMs() + "\n")
                .getBytes(StandardCharsets.US_ASCII);
            if (lost) {
              System.out.println("LOST");
              System.out.flush();
              append(logf, "LOST " + pid() + " " + nowMs() + "\n");
              Runtime.getRuntime().halt(75);
            }
            if (out != null)
              out.write(line);
            Thread.sleep(10);
          }
        }
      }
      Thread.sleep(holdMs);
      if (mine != null)
        Files.deleteIfExists(mine);
      append(logf, "REL " + pid() + " " + seqOf(node) + " " + token + " "
          + nowMs() + " S\n");
      try {
        lease.close();
      } catch (Exception e) {
        System.err.println("CuratorLock: release: " + e);
        status = 1;
        break;
      }
    }
    System.out.println("MAX " + maxInside);
    System.out.flush();
    append(logf, "MAX " + pid() + " " + maxInside + "\n");
    client.close();
    return status;
  }


  /* ---- the election: --recipe latch and --recipe selector ---- */

  interface Leads {
    boolean now();
  }

  private static long czxid(CuratorFramework client, String node) {
    try {
      Stat st = node == null ? null : client.checkExists().forPath(node);
      return st == null ? -1 : st.getCzxid();
    } catch (Exception e) {
      return -1;
    }
  }

  private static int noteLost(String logf, long token) {
    System.out.println("LOST");
    System.out.flush();
    append(logf, "LOST " + pid() + " " + token + " " + nowMs() + "\n");
    return 75;
  }

  /* lockworker's lead_term(): ACQ, the writes (each right after a check
   * that it still leads), REL; 0, 3 (overlap) or 75 (lost). Held forever
   * it returns only 75. */
  private static String releaseFile;

  private static int leadTerm(Leads leads, String node, long token,
      String kind, String logf, String res, long holdMs, boolean forever)
      throws Exception {
    if (!leads.now())
      return noteLost(logf, token);
    append(logf, "ACQ " + pid() + " " + seqOf(node) + " " + token + " "
        + nowMs() + " " + kind + "\n");
    if (forever) {
      System.out.println("HELD " + node + " " + token);
      System.out.flush();
      for (;;) {
        if (!leads.now())
          return noteLost(logf, token);
        append(logf, "TOUCH " + pid() + " " + token + " " + nowMs() + "\n");
        Thread.sleep(10);
      }
    }
    Path holder = res == null ? null : Paths.get(res + ".holder");
    if (holder != null) {
      try {
        Files.createFile(holder); /* O_CREAT|O_EXCL */
      } catch (FileAlreadyExistsException e) {
        System.err.println("CuratorLock " + pid()
            + ": OVERLAP: another leader inside");
        return 3;
      }
    }
    long end = nowMs() + holdMs;
    do {
      if (!leads.now())
        return noteLost(logf, token);
      append(logf, "TOUCH " + pid() + " " + token + " " + nowMs() + "\n");
      Thread.sleep(10);
    } while (nowMs() < end
        || (releaseFile != null && !Files.exists(Paths.get(releaseFile))));
    if (holder != null)
      Files.deleteIfExists(holder);
    append(logf, "REL " + pid() + " " + seqOf(node) + " " + token + " "
        + nowMs() + " " + kind + "\n");
    return 0;
  }

  /* --recipe latch: @iterations terms of a LeaderLatch each (or one
   * forever) */
  private static int runLatch(CuratorFramework client, String path,
      String id, long iterations, long holdMs, long timeoutMs,
      boolean forever, String logf, String res) throws Exception {
    int status = 0;
    for (long it = 0; it < (forever ? 1 : iterations); it++) {
      LeaderLatch latch = new LeaderLatch(client, path, id == null ? "" : id);
      latch.start();
      boolean got;
      try {
        if (timeoutMs < 0) {
          latch.await();
          got = true;
        } else {
          got = latch.await(timeoutMs, TimeUnit.MILLISECONDS);
        }
      } catch (Exception e) {
        System.err.println("CuratorLock " + pid() + ": await: " + e);
        got = false;
      }
      if (!got) {
        System.err.println("CuratorLock " + pid() + ": lead: timed out");
        latch.close();
        status = 1;
        break;
      }
      String node = latch.getOurPath();
      status = leadTerm(latch::hasLeadership, node, czxid(client, node), "L",
          logf, res, holdMs, forever);
      latch.close();
      if (status != 0)
        break;
    }
    return status;
  }

  /* --recipe selector: a LeaderSelector with autoRequeue(), closed after
   * @iterations terms (or one forever, or a loss) */
  private static int runSelector(CuratorFramework client, String path,
      String id, long iterations, long holdMs, boolean forever, String logf,
      String res) throws Exception {
    final long want = forever ? 1 : iterations;
    final Object mu = new Object();
    final long[] terms = {0};
    final int[] status = {0};
    final LeaderSelector[] self = {null};
    LeaderSelector sel = new LeaderSelector(client, path,
        new LeaderSelectorListenerAdapter() {
          @Override
          public void takeLeadership(CuratorFramework c) throws Exception {
            synchronized (mu) {
              if (status[0] != 0 || terms[0] >= want)
                return;
            }
            /* the selector's mutex node (a private field) */
            String node = null;
            try {
              java.lang.reflect.Field f =
                  LeaderSelector.class.getDeclaredField("mutex");
              f.setAccessible(true);
              node = lockPath((InterProcessMutex) f.get(self[0]));
            } catch (Exception e) {
              /* node stays null: token -1 */
            }
            int st;
            try {
              st = leadTerm(
                  () -> self[0].hasLeadership()
                      && !Thread.currentThread().isInterrupted(),
                  node, czxid(c, node), "E", logf, res, holdMs, forever);
            } catch (InterruptedException e) {
              st = noteLost(logf, czxid(c, node));
            }
            synchronized (mu) {
              terms[0]++;
              if (st != 0 && status[0] == 0)
                status[0] = st;
              mu.notifyAll();
            }
          }
        });
    self[0] = sel;
    if (id != null)
      sel.setId(id);
    sel.autoRequeue();
    sel.start();
    synchronized (mu) {
      while (status[0] == 0 && terms[0] < want)
        mu.wait();
    }
    sel.close();
    return status[0];
  }

  public static void main(String[] argv) throws Exception {
    String servers = null, path = null, logf = null, res = null, id = null,
        waitFile = null;
    long iterations = 1, holdMs = 10, timeoutMs = -1, sessionMs = 10000,
        permits = 1;
    boolean forever = false;
    String recipe = "mutex";
    for (int i = 0; i < argv.length; i++) {
      String a = argv[i];
      if (a.equals("--hold-forever")) {
        forever = true;
        continue;
      }
      if (i + 1 >= argv.length)
        usage();
      String v = argv[++i];
      switch (a) {
      case "--servers": servers = v; break;
      case "--path": path = v; break;
      case "--iterations": iterations = num(v); break;
      case "--hold-ms": holdMs = num(v); break;
      case "--timeout-ms": timeoutMs = num(v); break;
      case "--session-ms": sessionMs = num(v); break;
      case "--log": logf = v; break;
      case "--resource": res = v; break;
      case "--id": id = v; break;
      case "--wait-file": waitFile = v; break;
      case "--release-file": releaseFile = v; break;
      case "--end":
        if (!v.equals("resign") && !v.equals("free"))
          usage();
        break;
      case "--permits":
        permits = num(v);
        if (permits < 1 || permits > Integer.MAX_VALUE)
          usage();
        break;
      case "--recipe":
        /* the Curator recipe to contend with: InterProcessMutex,
         * InterProcessReadWriteLock, InterProcessSemaphoreV2, LeaderLatch,
         * LeaderSelector */
        if (!v.equals("mutex") && !v.equals("read") && !v.equals("write")
            && !v.equals("mixed") && !v.equals("semaphore")
            && !v.equals("latch") && !v.equals("selector")) {
          System.err.println("CuratorLock: unknown recipe '" + v
              + "' (known: mutex, read, write, mixed, semaphore, latch,"
              + " selector)");
          System.exit(64);
        }
        recipe = v;
        break;
      default: usage();
      }
    }
    if (servers == null || path == null)
      usage();

    CuratorFramework client = CuratorFrameworkFactory.builder()
        .connectString(servers)
        .sessionTimeoutMs((int) sessionMs)
        .connectionTimeoutMs(20000)
        .retryPolicy(new ExponentialBackoffRetry(100, 3))
        .build();
    client.getConnectionStateListenable().addListener((c, st) -> {
      /* like lockworker, whose zkr_mutex_is_held() is false as soon as the
       * session is suspended: Curator's advice too */
      if (st == ConnectionState.SUSPENDED || st == ConnectionState.LOST)
        lost = true;
    });
    client.start();
    if (!client.blockUntilConnected(20, TimeUnit.SECONDS)) {
      System.err.println("CuratorLock: connect: timed out");
      client.close();
      System.exit(1);
    }
    if (waitFile != null) {
      System.out.println("READY");
      System.out.flush();
      Path go = Paths.get(waitFile);
      while (!Files.exists(go))
        Thread.sleep(5);
    }
    if (recipe.equals("latch") || recipe.equals("selector")) {
      System.out.println("SESSION " + Long.toHexString(
          client.getZookeeperClient().getZooKeeper().getSessionId()));
      System.out.flush();
      int st = recipe.equals("latch")
          ? runLatch(client, path, id, iterations, holdMs, timeoutMs, forever,
              logf, res)
          : runSelector(client, path, id, iterations, holdMs, forever, logf,
              res);
      client.close();
      System.exit(st);
    }
    if (recipe.equals("semaphore"))
      System.exit(runSemaphore(client, path, (int) permits, id, iterations,
          holdMs, timeoutMs, forever, logf, res));
    Mutex mutex = null;
    InterProcessReadWriteLock rw = null;
    if (recipe.equals("mutex"))
      mutex = new Mutex(client, path,
          id == null ? null : id.getBytes(StandardCharsets.UTF_8));
    else if (id == null)
      rw = new InterProcessReadWriteLock(client, path);
    else
      rw = new InterProcessReadWriteLock(client, path,
          id.getBytes(StandardCharsets.UTF_8));
    Path holder = res == null ? null : Paths.get(res + ".holder");
    Path mine = res == null ? null : Paths.get(res + ".r." + pid());
    Random rnd = new Random(pid());
    int status = 0;
    for (long it = 0; it < (forever ? 1 : iterations); it++) {
      boolean reading = recipe.equals("read")
          || (recipe.equals("mixed") && rnd.nextInt(10) < 8);
      InterProcessMutex m = rw == null ? mutex
          : reading ? rw.readLock() : rw.writeLock();
      boolean got;
      try {
        if (timeoutMs < 0) {
          m.acquire();
          got = true;
        } else {
          got = m.acquire(timeoutMs, TimeUnit.MILLISECONDS);
        }
      } catch (Exception e) {
        System.err.println("CuratorLock " + pid() + ": acquire: " + e);
        status = 1;
        break;
      }
      if (!got) {
        System.err.println("CuratorLock " + pid() + ": acquire: timed out");
        status = 1;
        break;
      }
      String node = lockPath(m);
      long token = -1;
      try {
        Stat st = client.checkExists().forPath(node);
        if (st != null)
          token = st.getCzxid();
      } catch (Exception e) {
        /* token stays -1 */
      }
      boolean overlap = false;
      int inside = 0;
      if (holder != null && reading) {
        try {
          Files.createFile(mine);
        } catch (FileAlreadyExistsException e) {
          /* left from an earlier iteration: still ours */
        }
        overlap = Files.exists(holder);
        inside = readersInside(res);
      } else if (holder != null) {
        try {
          Files.createFile(holder); /* O_CREAT|O_EXCL */
        } catch (FileAlreadyExistsException e) {
          overlap = true;
        }
        if (!overlap && rw != null)
          overlap = readersInside(res) > 0;
      }
      append(logf, "ACQ " + pid() + " " + seqOf(node) + " " + token + " "
          + nowMs() + " " + (reading ? "R" : "W") + " " + inside + "\n");
      if (overlap) {
        System.err.println("CuratorLock " + pid() + ": OVERLAP: a "
            + (reading ? "reader found a writer" : "writer found another holder")
            + " inside");
        status = 3;
        break;
      }
      if (forever) {
        System.out.println("HELD " + node + " " + token);
        System.out.flush();
        watchNode(client, node);
        for (;;) {
          if (lost) {
            System.out.println("LOST");
            System.out.flush();
            append(logf, "LOST " + pid() + " " + nowMs() + "\n");
            Runtime.getRuntime().halt(75);
          }
          append(logf, "TOUCH " + pid() + " " + nowMs() + "\n");
          Thread.sleep(10);
        }
      }
      Thread.sleep(holdMs);
      while (releaseFile != null && !Files.exists(Paths.get(releaseFile)))
        Thread.sleep(10); // the test releases on cue
      if (holder != null)
        Files.deleteIfExists(reading ? mine : holder);
      append(logf, "REL " + pid() + " " + seqOf(node) + " " + token + " "
          + nowMs() + "\n");
      try {
        m.release();
      } catch (Exception e) {
        System.err.println("CuratorLock: release: " + e);
        status = 1;
        break;
      }
    }
    client.close();
    System.exit(status);
  }
}

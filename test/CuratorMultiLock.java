/*
 * CuratorMultiLock: Apache Curator's InterProcessMultiLock (its users'
 * sorted paths) against zkr-lock --and sets on the same paths, for
 * test/t-interop-multilock.sh. Curator's multi-lock holds one lock while
 * it queues for the next, so a zkr set made in between waits for it while
 * it waits for the set: zkr's set must find that cycle and yield.
 *
 *   java -cp DIR:JARS CuratorMultiLock SERVERS ROOT ZKR_LOCK MARKS YIELD ROUNDS
 *
 * ROOT/p1, ROOT/p2, ROOT/p3 are the locks; ZKR_LOCK is the zkr-lock program,
 * run with -vv --yield-after YIELD; MARKS is an empty directory. Every
 * holder (Curator's and zkr's) creates MARKS/pN exclusively for each lock it
 * holds and removes it before it releases: a creation that finds the file
 * there is two holders at once.
 *
 * Phase 1 makes the cycle on purpose: a single Curator mutex holds p1; a
 * Curator multi-lock (p1, p2) queues behind it at p1; a zkr set (p2, p1) is
 * made (first at p2, behind both at p1); the single mutex lets go, so the
 * multi-lock holds p1 and queues at p2 behind the set. Phase 2 runs ROUNDS
 * rounds of two Curator multi-locks and two zkr-lock loops over random
 * subsets of two or three of the paths, at once, each pausing 0.15 to
 * 0.45 s between its rounds.
 *
 * Prints lines "KEY value" (FORCED_CURATOR_MS, FORCED_ZKR_MS, CURATOR_DONE,
 * ZKR_DONE, MAX_WAIT_CURATOR_MS, MAX_WAIT_ZKR_MS, VIOLATIONS, FAILED, YIELDS)
 * and exits 0 (1 on a setup failure).
 */
import java.io.File;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMultiLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorMultiLock {
  static String servers, root, zkrLock, marks, yieldAfter;
  static final AtomicInteger violations = new AtomicInteger();
  static final AtomicInteger failed = new AtomicInteger();
  static final AtomicInteger yields = new AtomicInteger();
  static final AtomicInteger curatorDone = new AtomicInteger();
  static final AtomicInteger zkrDone = new AtomicInteger();
  static final AtomicLong maxCurator = new AtomicLong();
  static final AtomicLong maxZkr = new AtomicLong();
  static final AtomicInteger logs = new AtomicInteger();

  static CuratorFramework client() throws Exception {
    CuratorFramework c = CuratorFrameworkFactory.newClient(
        servers, 10000, 10000, new ExponentialBackoffRetry(100, 5));
    c.start();
    if (!c.blockUntilConnected(20, TimeUnit.SECONDS)) {
      System.err.println("cannot connect");
      System.exit(1);
    }
    return c;
  }

  static void max(AtomicLong m, long v) {
    m.accumulateAndGet(v, Math::max);
  }

  /* The marks of a Curator holder. */
  static boolean mark(List<String> names) {
    boolean good = true;
    for (String n : names) {
      try {
        Files.createFile(Paths.get(marks, n));
      } catch (FileAlreadyExistsException e) {
        violations.incrementAndGet();
        System.err.println("two holders of " + n);
        good = false;
      } catch (Exception e) {
        failed.incrementAndGet();
        good = false;
      }
    }
    return good;
  }

  static void unmark(List<String> names) {
    for (String n : names) {
      try {
        Files.deleteIfExists(Paths.get(marks, n));
      } catch (Exception e) {
        failed.incrementAndGet();
      }
    }
  }

  static List<String> paths(List<String> names) {
    List<String> p = new ArrayList<>();
    for (String n : names)
      p.add(root + "/" + n);
    return p;
  }

  /* zkr-lock --and over @names (in this order), holding ~@holdMs; its
   * time from start to exit, or -1 if it failed. */
  static long zkr(List<String> names, int holdMs) throws Exception {
    List<String> cmd = new ArrayList<>();
    cmd.add(zkrLock);
    cmd.add("-vv");
    cmd.add("-s");
    cmd.add(servers);
    cmd.add("-t");
    cmd.add("60");
    cmd.add("--yield-after");
    cmd.add(yieldAfter);
    for (int i = 1; i < names.size(); i++) {
      cmd.add("--and");
      cmd.add(root + "/" + names.get(i));
    }
    cmd.add(root + "/" + names.get(0));
    cmd.add("--");
    cmd.add("sh");
    cmd.add("-c");
    cmd.add("set -C; for p in \"$@\"; do : > \"$M/$p\" || exit 9; done; "
        + "sleep " + (holdMs / 1000.0) + "; for p in \"$@\"; do rm -f \"$M/$p\"; done");
    cmd.add("sh");
    cmd.addAll(names);
    ProcessBuilder pb = new ProcessBuilder(cmd);
    pb.environment().put("M", marks);
    File err = new File(marks + "/../zkr-" + logs.incrementAndGet() + ".err");
    pb.redirectErrorStream(false);
    pb.redirectError(err);
    pb.redirectOutput(ProcessBuilder.Redirect.DISCARD);
    long t0 = System.nanoTime();
    Process p = pb.start();
    int code = p.waitFor();
    long ms = (System.nanoTime() - t0) / 1000000;
    String log = new String(Files.readAllBytes(err.toPath()));
    if (log.contains("wait-for cycle"))
      yields.incrementAndGet();
    if (code == 9) {
      violations.incrementAndGet();
      System.err.println("zkr: two holders of one of " + names);
    } else if (code != 0) {
      failed.incrementAndGet();
      System.err.println("zkr-lock exit " + code + ": " + log);
      return -1;
    }
    return ms;
  }

  /* One Curator multi-lock round over @names (sorted, as its users must):
   * its wait, or -1. */
  static long curator(CuratorFramework c, List<String> names, int holdMs)
      throws Exception {
    List<String> sorted = new ArrayList<>(names);
    Collections.sort(sorted);
    InterProcessMultiLock ml = new InterProcessMultiLock(c, paths(sorted));
    long t0 = System.nanoTime();
    if (!ml.acquire(60, TimeUnit.SECONDS)) {
      failed.incrementAndGet();
      System.err.println("curator: not acquired in 60 s: " + sorted);
      return -1;
    }
    long ms = (System.nanoTime() - t0) / 1000000;
    mark(sorted);
    Thread.sleep(holdMs);
    unmark(sorted);
    ml.release();
    return ms;
  }

  static int children(CuratorFramework c, String n) throws Exception {
    try {
      return c.getChildren().forPath(root + "/" + n).size();
    } catch (org.apache.zookeeper.KeeperException.NoNodeException e) {
      return 0;
    }
  }

  static void waitChildren(CuratorFramework c, String n, int want)
      throws Exception {
    for (int i = 0; i < 400 && children(c, n) < want; i++)
      Thread.sleep(50);
  }

  static List<String> pick(Random r) {
    List<String> all = new ArrayList<>(List.of("p1", "p2", "p3"));
    Collections.shuffle(all, r);
    return new ArrayList<>(all.subList(0, 2 + r.nextInt(2)));
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 6) {
      System.err.println(
          "usage: CuratorMultiLock SERVERS ROOT ZKR_LOCK MARKS YIELD ROUNDS");
      System.exit(64);
    }
    servers = args[0];
    root = args[1];
    zkrLock = args[2];
    marks = args[3];
    yieldAfter = args[4];
    int rounds = Integer.parseInt(args[5]);
    CuratorFramework a = client(), b = client();

    /* phase 1: the cycle made on purpose */
    InterProcessMutex single = new InterProcessMutex(a, root + "/p1");
    single.acquire();
    long[] forced = {-1, -1};
    Thread cur = new Thread(() -> {
      try {
        forced[0] = curator(b, List.of("p1", "p2"), 100);
      } catch (Exception e) {
        failed.incrementAndGet();
      }
    });
    cur.start();
    waitChildren(a, "p1", 2);
    Thread z = new Thread(() -> {
      try {
        forced[1] = zkr(List.of("p2", "p1"), 100);
      } catch (Exception e) {
        failed.incrementAndGet();
      }
    });
    z.start();
    waitChildren(a, "p2", 1);
    waitChildren(a, "p1", 3);
    long t0 = System.nanoTime();
    single.release();
    cur.join();
    z.join();
    System.out.println("FORCED_CURATOR_MS " + (forced[0] < 0 ? -1 : (System.nanoTime() - t0) / 1000000));
    System.out.println("FORCED_ZKR_MS " + forced[1]);
    int forcedYields = yields.get();
    System.out.println("FORCED_YIELDS " + forcedYields);

    /* phase 2: two Curator multi-locks and two zkr-lock loops at once */
    List<Thread> ts = new ArrayList<>();
    for (int k = 0; k < 4; k++) {
      final int id = k;
      final CuratorFramework c = k == 0 ? a : b;
      ts.add(new Thread(() -> {
        Random r = new Random(1000 + id);
        for (int i = 0; i < rounds; i++) {
          try {
            /* two or three paths (sorted for Curator; zkr in the order
               drawn): a cycle may run through a path a zkr set does not
               take, which its search reads as a sibling of its own */
            List<String> names = pick(r);
            int hold = 20 + r.nextInt(100);
            if (id < 2) {
              long w = curator(c, names, hold);
              if (w >= 0) {
                max(maxCurator, w);
                curatorDone.incrementAndGet();
              }
            } else {
              long w = zkr(names, hold);
              if (w >= 0) {
                max(maxZkr, w - hold);
                zkrDone.incrementAndGet();
              }
            }
            Thread.sleep(150 + r.nextInt(300)); /* (a pause between
              rounds, as real work has: without one, Curator's multi-locks
              queue again at their first path at once, and a zkr set can
              close a new cycle on every attempt; docs/multilock.md) */
          } catch (Exception e) {
            failed.incrementAndGet();
            System.err.println("round: " + e);
          }
        }
      }));
    }
    for (Thread t : ts)
      t.start();
    for (Thread t : ts)
      t.join();
    System.out.println("CURATOR_DONE " + curatorDone.get());
    System.out.println("ZKR_DONE " + zkrDone.get());
    System.out.println("MAX_WAIT_CURATOR_MS " + maxCurator.get());
    System.out.println("MAX_WAIT_ZKR_MS " + maxZkr.get());
    System.out.println("VIOLATIONS " + violations.get());
    System.out.println("FAILED " + failed.get());
    System.out.println("YIELDS " + (yields.get() - forcedYields));
    a.close();
    b.close();
  }
}

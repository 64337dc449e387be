/*
 * CuratorRevoke: Apache Curator's side of the revocation interoperability
 * test (test/t-interop-revoke.sh).
 *
 *   java -cp DIR:JARS CuratorRevoke MODE SERVERS PATH
 *     hold    take the InterProcessMutex at PATH after makeRevocable():
 *             print "HELD", then on a revocation request "REVOKED",
 *             release (on the thread that acquired, as Curator requires),
 *             print "RELEASED" and exit 0 (exit 3 if no request came
 *             within 60 s)
 *     revoke  Revoker.attemptRevoke() on the node of PATH's current holder
 *             (the first of the mutex's participant nodes): print
 *             "ASKED <node>" and exit 0, or "NONE" and exit 1 if nothing
 *             is held
 */
import java.util.Collection;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorRevoke {
  public static void main(String[] args) throws Exception {
    if (args.length != 3) {
      System.err.println("usage: CuratorRevoke hold|revoke SERVERS PATH");
      System.exit(64);
    }
    CuratorFramework c = CuratorFrameworkFactory.newClient(
        args[1], 10000, 10000, new ExponentialBackoffRetry(100, 5));
    c.start();
    if (!c.blockUntilConnected(20, TimeUnit.SECONDS)) {
      System.err.println("cannot connect");
      System.exit(69);
    }
    InterProcessMutex m = new InterProcessMutex(c, args[2]);
    int code = 0;
    if (args[0].equals("hold")) {
      CountDownLatch asked = new CountDownLatch(1);
      m.makeRevocable(lock -> asked.countDown());
      m.acquire();
      System.out.println("HELD");
      System.out.flush();
      if (asked.await(60, TimeUnit.SECONDS)) {
        System.out.println("REVOKED");
        m.release();
        System.out.println("RELEASED");
      } else {
        code = 3;
      }
    } else {
      Collection<String> nodes = m.getParticipantNodes();
      if (nodes.isEmpty()) {
        System.out.println("NONE");
        code = 1;
      } else {
        String node = nodes.iterator().next();
        Revoker.attemptRevoke(c, node);
        System.out.println("ASKED " + node);
      }
    }
    System.out.flush();
    c.close();
    System.exit(code);
  }
}

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Latch: never a deadlock. The main thread awaits a CountDownLatch without a timeout while a
 * ScheduledExecutorService counts it down after SECONDS; meanwhile the JVM's helpers tick.
 * Ends `ok`.
 *
 * Usage: java -cp DIR Latch SECONDS
 */
public class Latch {
    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 3;
        CountDownLatch latch = new CountDownLatch(1);
        ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
        timer.schedule(latch::countDown, (long) (seconds * 1000), TimeUnit.MILLISECONDS);
        latch.await();
        timer.shutdown();
        System.out.println("counted down after " + seconds + " s");
    }
}

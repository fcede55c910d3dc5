import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Deadlock: drives `deadlock` in a JVM, whose own housekeeping threads (GC, compilers, VM
 * periodic task, Common-Cleaner, …) keep ticking.
 *
 * Usage: java -cp DIR Deadlock monitors|locks|ticking
 *
 * monitors: two threads enter two `synchronized` blocks in opposite order.
 * locks:    the same with two java.util.concurrent ReentrantLocks.
 * ticking:  the locks beside a ScheduledExecutorService ticking every 50 ms, as a service's
 *           metrics flusher does: the tick's code keeps the JIT compiler threads busy (and
 *           reading files) long after the deadlock.
 * The JVM's own report (jcmd PID Thread.print: "Found one Java-level deadlock") names the cycle.
 * Never exits.
 */
public class Deadlock {
    static final Object a = new Object(), b = new Object();
    static final ReentrantLock la = new ReentrantLock(), lb = new ReentrantLock();

    public static void main(String[] args) throws Exception {
        String mode = args.length > 0 ? args[0] : "monitors";
        boolean locks = !mode.equals("monitors");
        if (mode.equals("ticking")) {
            ScheduledExecutorService tick = Executors.newSingleThreadScheduledExecutor();
            long[] ticks = new long[1];
            tick.scheduleAtFixedRate(() -> ticks[0]++, 0, 50, TimeUnit.MILLISECONDS);
        }
        Thread t1 = new Thread(() -> { if (locks) locks(la, lb); else monitors(a, b); }, "first");
        Thread t2 = new Thread(() -> { if (locks) locks(lb, la); else monitors(b, a); }, "second");
        t1.start();
        t2.start();
        System.err.println("Deadlock: two threads taking " + (locks ? "ReentrantLocks" : "monitors") + " in opposite order");
        t1.join();
        System.out.println("unreachable: no deadlock");
    }

    static void monitors(Object first, Object second) {
        synchronized (first) {
            pause();
            synchronized (second) {
            }
        }
    }

    static void locks(ReentrantLock first, ReentrantLock second) {
        first.lock();
        try {
            pause();
            second.lock();
            second.unlock();
        } finally {
            first.unlock();
        }
    }

    static void pause() {
        try {
            Thread.sleep(300);
        } catch (InterruptedException e) {
        }
    }
}

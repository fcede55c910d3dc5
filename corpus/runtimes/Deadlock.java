import java.util.concurrent.locks.ReentrantLock;

/**
 * Deadlock: drives `deadlock` in a JVM, whose own housekeeping threads (GC, compilers, VM
 * periodic task, Common-Cleaner, …) keep ticking.
 *
 * Usage: java -cp DIR Deadlock monitors|locks
 *
 * monitors: two threads enter two `synchronized` blocks in opposite order.
 * locks:    the same with two java.util.concurrent ReentrantLocks.
 * The JVM's own report (jcmd PID Thread.print: "Found one Java-level deadlock") names the cycle.
 * Never exits.
 */
public class Deadlock {
    static final Object a = new Object(), b = new Object();
    static final ReentrantLock la = new ReentrantLock(), lb = new ReentrantLock();

    public static void main(String[] args) throws Exception {
        boolean locks = args.length > 0 && args[0].equals("locks");
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

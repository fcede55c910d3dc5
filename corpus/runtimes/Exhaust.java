import java.lang.invoke.MethodHandles;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Exhaust: the JVM's own limits, each reported by an uncaught error (exit status 1), and twins
 * that catch the same error and recover (exit 0).
 *
 * Usage: java [-Xmx32m | -XX:MaxMetaspaceSize=16m] -cp DIR Exhaust MODE [N]
 *
 *   heap            fills a list with arrays: OutOfMemoryError: Java heap space -> out_of_memory
 *   gc              fills a map with small strings under -XX:+UseParallelGC: GC overhead limit
 *                   exceeded (or Java heap space) -> out_of_memory
 *   metaspace       defines hidden classes until -XX:MaxMetaspaceSize is reached
 *   threads N       starts N sleeping daemon threads: under --pids below that, unable to create
 *                   native thread -> exit_failure naming the pids ceiling; otherwise ok
 *   stack           unbounded recursion: StackOverflowError -> crash
 *   recover-heap    fills the heap, catches OutOfMemoryError, frees it, goes on -> ok
 *   recover-stack   catches StackOverflowError -> ok
 */
public class Exhaust {
    static class Tiny {}

    static int depth(int n) {
        return depth(n + 1) + 1;
    }

    static List<long[]> fill() {
        List<long[]> keep = new ArrayList<>();
        while (true) {
            keep.add(new long[1 << 16]);
        }
    }

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "heap":
                fill();
                break;
            case "gc": {
                Map<Integer, String> m = new HashMap<>();
                for (int i = 0; ; i++) {
                    m.put(i, "v" + i);
                }
            }
            case "metaspace": {
                byte[] bytes = Exhaust.class.getResourceAsStream("Exhaust$Tiny.class").readAllBytes();
                MethodHandles.Lookup lookup = MethodHandles.lookup();
                List<Class<?>> keep = new ArrayList<>();
                while (true) {
                    keep.add(lookup.defineHiddenClass(bytes, false).lookupClass());
                }
            }
            case "threads": {
                int n = Integer.parseInt(args[1]);
                for (int i = 0; i < n; i++) {
                    Thread t = new Thread(() -> {
                        try {
                            Thread.sleep(60_000);
                        } catch (InterruptedException e) {
                            return;
                        }
                    });
                    t.setDaemon(true);
                    t.start();
                }
                System.out.println("started " + n + " threads");
                break;
            }
            case "stack":
                depth(0);
                break;
            case "recover-heap": {
                try {
                    fill();
                } catch (OutOfMemoryError e) {
                    System.out.println("caught " + e + ", freed the list");
                }
                System.out.println("recovered");
                break;
            }
            case "recover-stack": {
                try {
                    depth(0);
                } catch (StackOverflowError e) {
                    System.out.println("caught " + e);
                }
                System.out.println("recovered");
                break;
            }
            default:
                System.err.println("Exhaust: unknown mode " + args[0]);
                System.exit(64);
        }
    }
}

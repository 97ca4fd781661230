// Reads dbsweep's .hlog files with HdrHistogram's own HistogramLogReader (tests/e2e/exports.rs
// runs it as a single-file program: java -cp HdrHistogram.jar ReadHlogs.java FILE...).
// Prints one line per file: its path, the count of each interval, then the whole log's
// count, 99th percentile and maximum (nanoseconds, as recorded).
import org.HdrHistogram.EncodableHistogram;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramLogReader;

public class ReadHlogs {
    public static void main(String[] args) throws Exception {
        for (String path : args) {
            HistogramLogReader reader = new HistogramLogReader(path);
            Histogram total = new Histogram(3);
            StringBuilder counts = new StringBuilder();
            EncodableHistogram interval;
            while ((interval = reader.nextIntervalHistogram()) != null) {
                Histogram h = (Histogram) interval;
                counts.append(counts.length() == 0 ? "" : ",").append(h.getTotalCount());
                total.add(h);
            }
            System.out.println(path + " " + counts + " " + total.getTotalCount() + " "
                + total.getValueAtPercentile(99.0) + " " + total.getMaxValue());
        }
    }
}

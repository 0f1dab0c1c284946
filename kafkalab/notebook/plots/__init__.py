"""Views of Kafka traffic: sequence diagrams, latency, throughput, consumer lag and errors.

Everything here works from the data-model tables (``frames``, ``exchanges``, ``records``), so a Capture, the
broker's journal and Spark results are handled alike. Each function accepts

* a table: a pandas DataFrame with the data-model columns, or anything with ``toPandas()`` (Spark) or
  ``to_pandas()`` (Arrow), converted here (keep such tables small, or aggregate first);
* a source: a :class:`~kafkalab.capture.Capture`, a :class:`~kafkalab.broker.Broker`, an Explorer or a list
  of :class:`~kafkalab.dissect.frame.Frame`, whose table is taken.

Consumer lag needs message bodies (high watermarks, committed offsets), which no table carries:
:func:`offsets_table` reads them from Frame objects into an ``offsets`` table, and :func:`consumer_lag`
computes the lag from that table (so a Spark job producing the same columns gets the same lag).

Data functions (``latency_stats``, ``throughput``, ``io_graph``, ``conversations``, ``offsets_table``,
``consumer_lag``, ``error_timeline``)
return DataFrames; ``plot_*`` functions draw them with matplotlib (imported on first use, never at import
time) and return the Axes; :func:`sequence_diagram` returns a :class:`SequenceDiagram`, shown as SVG with a
plain-text ladder (what an untrusted notebook shows, since JupyterLab does not render untrusted SVG); the
SVG is a fifth of the PNG's size, so a saved notebook keeps only it (``to_png()`` draws the picture).
"""
from .common import PALETTE, ERROR_COLOR, INFERRED_COLOR, OFFSET_COLUMNS, LAG_COLUMNS, ERROR_COLUMNS, STATS_COLUMNS, UNKNOWN_TOPIC, frames_of, exchanges_of, exchanges_from_frames, records_of
from .latency import latency_stats, plot_latency, plot_latency_percentiles
from .throughput import throughput, plot_throughput, io_graph, plot_io
from .lag import offsets_table, topic_names, consumer_lag, plot_consumer_lag
from .errors import error_timeline, plot_errors
from .compare import COMPARE_COLUMNS, compare_frames
from .conversations import CONVERSATION_COLUMNS, conversations
from .io_svg import io_graph_svg
from .sequence import ROW, FONT, CHAR, TOP, LEFT, LABEL_CHARS, Arrow, Exchange, SequenceDiagram, sequence_diagram

__all__ = ['PALETTE', 'ERROR_COLOR', 'INFERRED_COLOR', 'OFFSET_COLUMNS', 'LAG_COLUMNS', 'ERROR_COLUMNS', 'STATS_COLUMNS', 'UNKNOWN_TOPIC', 'frames_of', 'exchanges_of', 'exchanges_from_frames', 'records_of', 'latency_stats', 'plot_latency', 'plot_latency_percentiles', 'throughput', 'plot_throughput', 'io_graph', 'plot_io', 'offsets_table', 'topic_names', 'consumer_lag', 'plot_consumer_lag', 'error_timeline', 'plot_errors', 'COMPARE_COLUMNS', 'compare_frames', 'CONVERSATION_COLUMNS', 'conversations', 'io_graph_svg', 'ROW', 'FONT', 'CHAR', 'TOP', 'LEFT', 'LABEL_CHARS', 'Arrow', 'Exchange', 'SequenceDiagram', 'sequence_diagram']

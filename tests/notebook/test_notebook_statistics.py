"""The explorer's Statistics panel in JupyterLab and Chromium: on a shipped capture (Conversations, Response
time and the I/O graph; a click on a row, a line's legend entry, filters the list) and on a broker the
explorer follows (the panel grows as frames arrive; acks=0 Produce counted apart, never "unanswered")."""
from __future__ import annotations

import os

import pytest

from tests.notebook.test_notebook_browser import REPO, RUN_IN_KERNEL, lab, notebook_page  # noqa: F401 (lab: fixture)

pytestmark = pytest.mark.slow

CAPTURE_CODE = f"""\
import kafkalab
from kafkalab.notebook import explore
cap = kafkalab.read_capture({str(REPO / "captures" / "produce-consume-none.pcap")!r})
ex = explore(cap, height="760px")
ex"""

LIVE_CODE = """\
import kafkalab
from kafka import KafkaProducer
from kafkalab.notebook import explore
shop = kafkalab.Broker(topics={"t": 1}).start()
fire = KafkaProducer(bootstrap_servers=shop.bootstrap_servers, acks=0, client_id="fire")
fire.send("t", b"first"); fire.flush()
ex = explore(shop, follow=0.3, height="760px")
ex"""


def count_text(page) -> str:
    return page.locator(".kl-count").inner_text()


def overlapping(page, selector: str) -> list:
    """Pairs of elements matching ``selector`` whose boxes intersect (by more than a pixel)."""
    return page.evaluate("""(selector) => {
      const boxes = [...document.querySelectorAll(selector)].map((e) => e.getBoundingClientRect());
      const out = [];
      boxes.forEach((a, i) => boxes.slice(i + 1).forEach((b, j) => {
        if (a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1) out.push([i, i + 1 + j]);
      }));
      return out;
    }""", selector)


def test_statistics_of_a_capture_filter_the_list(lab) -> None:
    with notebook_page(lab, "stats.ipynb", CAPTURE_CODE) as page:
        page.wait_for_selector('.kl-row[data-frame="1"]')
        total = count_text(page)
        page.click(".kl-stats-toggle")
        page.wait_for_selector('.kl-stats[data-tab="conversations"] .kl-conv')
        streams = page.evaluate(RUN_IN_KERNEL, "print(*sorted(int(s) for s in cap.connections.stream))")
        assert page.eval_on_selector_all(".kl-conv", "rs => rs.map(r => r.dataset.stream)") == streams.split()
        second = page.locator(".kl-conv").nth(1)
        stream, frames = second.get_attribute("data-stream"), second.locator("td").nth(3).inner_text()
        second.click()                                                     # a conversation: its stream only
        page.wait_for_function(f"() => document.querySelector('.kl-filter').value === 'stream == {stream}'")
        page.wait_for_function(f"() => document.querySelector('.kl-count').textContent.startsWith('{frames} of ')")

        page.click('.kl-stats-tab[data-tab="latency"]')                    # response time per API
        produce = page.locator('.kl-lat[data-api="Produce"] td')
        assert [produce.nth(i).inner_text() for i in (1, 3, 4)] == ["2", "0", "0"]   # requests, unanswered, acks=0
        expected = page.evaluate(RUN_IN_KERNEL, "from kafkalab.notebook.plots import latency_stats\n"
                                                "print(f\"{latency_stats(cap).loc['Produce', 'p90_ms']:.3f}\")")
        assert produce.nth(7).inner_text() == expected.strip()           # the same numbers as the plots module
        page.click('.kl-lat[data-api="Fetch"]')
        page.wait_for_function("() => document.querySelector('.kl-filter').value === 'api_name == \"Fetch\"'")
        fetches = page.evaluate(RUN_IN_KERNEL, "print(int((cap.frames.api_name == 'Fetch').sum()))").strip()
        page.wait_for_function(f"() => document.querySelector('.kl-count').textContent.startsWith('{fetches} of ')")

        page.click('.kl-stats-tab[data-tab="io"]')                         # the I/O graph, readable
        page.wait_for_selector(".kl-stats svg.kafkalab-io .io-legend")
        assert overlapping(page, ".kl-stats .io-legend text") == []
        assert overlapping(page, ".kl-stats text.io-tick") == []
        if os.environ.get("KAFKALAB_SCREENSHOT"):       # a picture for humans reviewing the layout
            page.locator(".kl-explorer").screenshot(path=os.environ["KAFKALAB_SCREENSHOT"])
        page.click('.kl-stats .io-legend[data-api="Metadata"]')
        page.wait_for_function("() => document.querySelector('.kl-filter').value === 'api_name == \"Metadata\"'")
        page.click(".kl-stats-toggle")                                     # closed again
        page.wait_for_selector(".kl-stats", state="hidden")
        assert page.evaluate(RUN_IN_KERNEL, "print(ex.statistics)") == "{}\n" and total.endswith(" frames")


def test_statistics_of_a_followed_broker_grow_with_it(lab) -> None:
    with notebook_page(lab, "stats-live.ipynb", LIVE_CODE) as page:
        page.wait_for_selector(".kl-live", state="visible")
        page.wait_for_selector('.kl-row[data-frame="1"]')
        page.click(".kl-stats-toggle")
        page.click('.kl-stats-tab[data-tab="latency"]')
        page.wait_for_selector('.kl-lat[data-api="Produce"]')
        produce = page.locator('.kl-lat[data-api="Produce"] td')
        assert produce.nth(3).inner_text() == "0" and produce.nth(4).inner_text() == produce.nth(1).inner_text()
        page.evaluate(RUN_IN_KERNEL, "sure = KafkaProducer(bootstrap_servers=shop.bootstrap_servers, acks=1, "
                                     "client_id='sure')\nsure.send('t', b'answered').get(timeout=30)")
        page.wait_for_function("""() => {
          const cells = document.querySelectorAll('.kl-lat[data-api="Produce"] td');
          return cells.length && cells[2].textContent === '1' && cells[3].textContent === '0';
        }""")                                                               # answered 1, unanswered still 0
        page.click('.kl-stats-tab[data-tab="conversations"]')
        page.wait_for_function("() => document.querySelectorAll('.kl-conv').length >= 2")
        out = page.evaluate(RUN_IN_KERNEL, "print(ex.statistics['frames'] == len(ex.frames))")
        assert out == "True\n"
        page.evaluate(RUN_IN_KERNEL, "ex.unfollow(); fire.close(); sure.close(); shop.stop()")

"""The base layout in a real browser: log in, find a task, read it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from benchwright import roles
from tests import factories

STATEMENT = r"""# Row softmax

Compute `softmax(x)` along the last dimension of a 2-D tensor, for every row $x_i$:

$$
y_{i,j} = \frac{e^{x_{i,j} - m_i}}{\sum_k e^{x_{i,k} - m_i}}, \quad m_i = \max_k x_{i,k}
$$

| shape | dtype |
|:------|:------|
| 4096 x 1000 | float16 |

```python
class ModelNew(torch.nn.Module):
    def forward(self, x):
        ...
```
"""

pytestmark = pytest.mark.browser


@pytest.fixture
def catalog(transactional_db):
    author = factories.make_user(roles.AUTHOR, username="ada", first_name="Ada", last_name="Kern")
    factories.make_published_task(
        author,
        slug="row-softmax",
        title="Row softmax",
        statement=STATEMENT,
        hardware="h100",
        tags=["triton", "softmax"],
    )
    factories.make_published_task(author, slug="fused-gelu", title="Fused GELU", tags=["triton"])
    factories.make_task(author, slug="layernorm-draft", title="LayerNorm draft", difficulty="hard")
    return author


def test_log_in_browse_the_task_list_and_read_a_task(
    live_server, catalog, page: Page, screenshots: Path
):
    outside_requests: list[str] = []
    page.on(
        "request",
        lambda request: (
            None
            if request.url.startswith(live_server.url)
            else outside_requests.append(request.url)
        ),
    )

    page.goto(f"{live_server.url}/")
    expect(page).to_have_url(re.compile(r"/login/\?next=/$"))
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    page.screenshot(path=screenshots / "login.png", full_page=True)

    page.get_by_label("Username").fill("ada")
    page.get_by_label("Password").fill("correct horse battery")
    page.get_by_role("button", name="Log in").click()

    expect(page.get_by_role("heading", name="Tasks")).to_be_visible()
    expect(page.locator(".account-name")).to_have_text("Ada Kern")
    rows = page.locator("#task-table tbody tr")
    expect(rows).to_have_count(3)
    page.screenshot(path=screenshots / "task-list.png", full_page=True)

    # htmx swaps only the table and puts the filter in the address bar.
    page.get_by_label("Search").fill("soft")
    expect(page).to_have_url(re.compile(r"[?&]q=soft"))
    expect(rows).to_have_count(1)
    assert page.evaluate("typeof window.htmx") == "object"

    page.get_by_role("link", name="Row softmax").click()
    expect(page).to_have_url(f"{live_server.url}/tasks/row-softmax/")
    statement = page.locator("article.markdown")
    expect(statement.get_by_role("heading", name="Row softmax")).to_be_visible()
    expect(statement.locator("table td").first).to_have_text("4096 x 1000")
    expect(statement.locator("pre code.language-python")).to_contain_text("class ModelNew")
    # TeX, kept from Markdown on the server, typeset by KaTeX in the browser.
    expect(statement.locator(".arithmatex .katex")).to_have_count(2)
    expect(statement.locator("div.arithmatex .katex-display")).to_have_count(1)
    assert "x_{i,j}" in (statement.locator("div.arithmatex annotation").text_content() or "")
    page.screenshot(path=screenshots / "task-page.png", full_page=True)

    page.set_viewport_size({"width": 800, "height": 900})
    page.screenshot(path=screenshots / "task-page-800.png", full_page=True)
    page.go_back()
    expect(rows).to_have_count(1)
    page.screenshot(path=screenshots / "task-list-800.png", full_page=True)

    assert outside_requests == []

#!/usr/bin/env python3
"""Uses camrec's page the way a person on a phone would, in headless Chromium (Debian's chromium +
chromium-driver, driven by Selenium) on an emulated 390x844 screen, and prints what happened as JSON:

  browser-page.py URL ROWS [SCREENSHOT.png]

Waits up to 15 s for the recordings table to list at least ROWS files and the live video to play,
then reports "rows" (each row's cells as text), "overflow" (pixels the page is wider than the
window: 0 when nothing needs sideways scrolling), "video_width" (the live video's on-screen width),
"played" (seconds the first recording's in-page player advanced after its "play" link was
clicked, and "played_src", the URL it played), "events" (each event row's cells as text),
"event_html" (the event rows' HTML element names: a label is text, never markup),
"thumbnail" (the first event picture's natural width and height once loaded, or null), "answer" (the line the page showed after "Key frame
now" was clicked) and "error" (a reason, or null).
"""
import sys
import time

from selenium.webdriver.common.by import By

from chromium import run_reporting


def wait(driver, script, seconds):
    deadline = time.time() + seconds
    value = driver.execute_script(script)
    while not value and time.time() < deadline:
        time.sleep(0.1)
        value = driver.execute_script(script)
    return value


def use_page(url, rows, screenshot, driver, result):
    driver.get(url)
    if not wait(driver, f"return document.querySelectorAll('#files tr').length >= {rows};", 15):
        result["error"] = "the recordings table did not fill"
        return
    if not wait(driver, "const v = document.getElementById('live'); return v.readyState >= 2 && v.currentTime > 0;", 15):
        result["error"] = "the live video did not play"
        return
    result.update(error=None, rows=driver.execute_script(
        "return [...document.querySelectorAll('#files tr')].map(r => [...r.cells].map(c => c.textContent.trim()));"))
    result["overflow"] = driver.execute_script(
        "return Math.max(0, document.documentElement.scrollWidth - window.innerWidth);")
    result["video_width"] = driver.execute_script(
        "return Math.round(document.getElementById('live').getBoundingClientRect().width);")
    result["window_width"] = driver.execute_script("return window.innerWidth;")
    result["events"] = driver.execute_script(
        "return [...document.querySelectorAll('#events tr')].map(r => [...r.cells].map(c => c.textContent.trim()));")
    result["event_html"] = driver.execute_script(
        "return [...new Set([...document.querySelectorAll('#events *')].map(e => e.tagName.toLowerCase()))].sort();")
    result["thumbnail"] = wait(driver, "const i = document.querySelector('#events img');"
                                       " return i && i.complete && i.naturalWidth > 0 ? [i.naturalWidth, i.naturalHeight] : null;", 10)
    plays = [a for a in driver.find_elements(By.CSS_SELECTOR, "#files a") if a.text == "play"]
    if plays:
        plays[0].click()
        wait(driver, "const p = document.getElementById('playback'); return p.readyState >= 2 && p.currentTime > 0;", 10)
        start = driver.execute_script("return document.getElementById('playback').currentTime;")
        time.sleep(1.5)
        p = driver.execute_script("const p = document.getElementById('playback');"
                                  " return {t: p.currentTime, src: p.currentSrc, error: p.error ? p.error.code : null};")
        result.update(played=round(p["t"] - start, 3) if p["error"] is None else None, played_src=p["src"],
                      played_error=p["error"])
    driver.find_element(By.ID, "keyframe").click()
    result["answer"] = wait(driver, "return document.getElementById('answer').textContent;", 5)
    if screenshot:
        driver.execute_script("window.scrollTo(0, 0);")
        driver.save_screenshot(screenshot)


def main():
    url, rows = sys.argv[1], int(sys.argv[2])
    screenshot = sys.argv[3] if len(sys.argv) > 3 else None
    run_reporting("browser-page.py", lambda driver, result: use_page(url, rows, screenshot, driver, result), phone=True)


if __name__ == "__main__":
    main()

"""Headless Chromium for the browser tools: Debian's chromium and chromium-driver, driven by Selenium.

run_reporting(name, body, phone=False) starts it, calls body(driver, result) and prints `result` as
one line of JSON however body ends: an exception becomes result["error"]. With phone, the screen is
an emulated 390x844 (a headless window cannot be narrower than 500 px).
"""
import json

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service


def start(phone=False):
    options = Options()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--autoplay-policy=no-user-gesture-required",
                "--disable-dev-shm-usage", "--mute-audio"):
        options.add_argument(arg)
    if phone:
        options.add_experimental_option("mobileEmulation", {"deviceMetrics": {"width": 390, "height": 844, "pixelRatio": 1}})
    else:
        options.add_argument("--window-size=800,600")
    options.binary_location = "/usr/bin/chromium"
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def run_reporting(name, body, phone=False):
    driver = start(phone)
    result = {"error": f"{name} did not finish"}
    try:
        body(driver, result)
    except Exception as e:
        result["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    finally:
        print(json.dumps(result))
        driver.quit()

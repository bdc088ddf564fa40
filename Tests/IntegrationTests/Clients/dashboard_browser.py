#!/usr/bin/python3
"""Drives the dashboard in headless Chromium, as a person would.

Loads the overview, waits for the progress bar of an executing job to move without a reload, writes a
screenshot, clicks the job's cancel button, accepts the confirmation, and waits for the job's page to say
`cancelled`. Prints one line per step; exits 0 when all passed.

    dashboard_browser.py BASE_URL JOB_ID SCREENSHOT_PATH

Needs Debian's chromium, chromium-driver and python3-selenium (scripts/install-deps installs them).
"""
import sys

from selenium import webdriver
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait


def main(base, job, screenshot):
    options = Options()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1100"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    wait = WebDriverWait(
        driver, 90, poll_frequency=0.2, ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)
    )
    bar = f'#executing tr[data-job="{job}"] progress'
    try:
        driver.get(base + "/")
        # A mark that a reload would wipe: the bar must move while the page stays.
        driver.execute_script("window.stayedOpen = true")
        first = float(wait.until(lambda d: d.find_element(By.CSS_SELECTOR, bar)).get_attribute("value"))
        print(f"progress bar at {first}", flush=True)
        moved = wait.until(lambda d: float(d.find_element(By.CSS_SELECTOR, bar).get_attribute("value")) > first
                           and float(d.find_element(By.CSS_SELECTOR, bar).get_attribute("value")))
        assert driver.execute_script("return window.stayedOpen === true"), "the page reloaded"
        print(f"progress bar moved to {moved} without a reload", flush=True)
        # The chart needs a few samples before it draws.
        wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "#chart svg"))
        driver.save_screenshot(screenshot)
        print(f"screenshot {screenshot}", flush=True)

        def click_cancel(d):
            d.find_element(By.CSS_SELECTOR, f'#executing tr[data-job="{job}"] form[action="/actions/cancel"] button').click()
            return True

        wait.until(click_cancel)
        wait.until(expected_conditions.alert_is_present()).accept()
        wait.until(lambda d: "notice=" in d.current_url)
        print("cancel posted", flush=True)
        driver.get(f"{base}/job?id={job}")
        wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "#job .tag.cancelled"))
        print(f"job {job} cancelled", flush=True)
    finally:
        driver.quit()


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])

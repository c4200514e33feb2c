# The search of NVIDIA JAX-Toolbox's triage tool, for benchmarks/peer_builds.py (hourly drives its
# version_search through the build_and_test callback; nothing here is hourly's code).
#
# Source: https://github.com/NVIDIA/JAX-Toolbox, .github/triage/jax_toolbox_triage/logic.py at
# commit bcbbfa578be90bf5c1dfef2c67cf074589391eee (the file last changed in d85ee152c19e).
# Licensed under the Apache License, Version 2.0; a copy of that repository's LICENSE.md is beside
# this file (benchmarks/peer/LICENSE.md). Distributed on an "AS IS" BASIS, WITHOUT WARRANTIES OR
# CONDITIONS OF ANY KIND. Changes: this comment was added; below it the file is byte for byte the
# original (check: tail -n +11 of this file against `git show <commit>:<path>`).

from dataclasses import dataclass
import datetime
from enum import auto, Enum
import functools
import itertools
import logging
import pathlib
import typing


class CouldNotReproduceFailure(Exception):
    pass


class CouldNotReproduceSuccess(Exception):
    pass


class TestExecutionOutcome(Enum):
    """
    Enumerate the possible outcomes of a build + test run. This might be extended in
    future to allow test cases to return more nuanced results, e.g. TEST_DOES_NOT_EXIST
    to avoid searching back before the introduction of a test case.
    """

    __test__ = False  # stop pytest gathering this
    BUILD_FAILURE = auto()
    TEST_ERROR = auto()  # test could not be run, no results
    TEST_YIELDED_RESULTS = auto()  # ran, yielded results


_EXIT_CODE_METRIC = "exit_code"


@dataclass
class TestResult:
    """
    Hold the outcome and the interleaved stdout/stderr of a test run.

    `build_stdouterr` can be None if there was no build, e.g. running the test case in
    an existing container.
    `stdouterr` can be None if the build did not succeed, so the test was not run.
    `metrics` is empty unless `result` is `TestExecutionOutcome.TEST_YIELDED_RESULTS`
    """

    __test__ = False  # stop pytest gathering this
    build_stdouterr: typing.Optional[str]
    host_output_directory: pathlib.Path
    result: TestExecutionOutcome
    stdouterr: typing.Optional[str]
    time: typing.Optional[float]
    metrics: typing.Dict[str, typing.Any]

    def exit_code_based_pass(self):
        exit_code = self.metrics.get(_EXIT_CODE_METRIC)
        return (
            self.result == TestExecutionOutcome.TEST_YIELDED_RESULTS
            and isinstance(exit_code, int)
            and exit_code == 0
        )

    def exit_code_based_fail(self):
        exit_code = self.metrics.get(_EXIT_CODE_METRIC)
        return (
            self.result == TestExecutionOutcome.TEST_YIELDED_RESULTS
            and isinstance(exit_code, int)
            and exit_code != 0
        )


class ClassifiedTestOutcome(Enum):
    """
    Enumerate the possible outcomes of a build + test run (+ possible re-runs)
    followed by classification of its results.
    """

    __test__ = False  # stop pytest gathering this
    AMBIGUOUS = auto()
    ERROR = auto()
    FAIL = auto()
    PASS = auto()


class ExecutionClassifier(typing.Protocol):
    def __call__(
        self, test_results: typing.Sequence[TestResult]
    ) -> ClassifiedTestOutcome:
        """
        Classify the given results. If the classifier returns that the results are
        ambiguous, it should not update its internal state and should expect to be
        called again with a longer `test_results` list.
        """
        ...

    def add_data_with_label(
        self, results: typing.Sequence[TestResult], label: ClassifiedTestOutcome
    ):
        """
        Add the given data to the internal state of the classifier. This can be used to
        add more samples from a known population after initialisation.
        """
        ...

    def text_summary(
        self, *, columns: int = 120, rows: int = 3
    ) -> typing.Sequence[str]:
        """
        Return some lines of text summarising the state of the classifier.
        """
        ...


class ExitCodeClassifier(ExecutionClassifier):
    """
    A simple classifier with no fuzziness and no retries.
    """

    def __call__(
        self, test_results: typing.Sequence[TestResult]
    ) -> ClassifiedTestOutcome:
        if all(r.exit_code_based_pass() for r in test_results):
            return ClassifiedTestOutcome.PASS
        elif all(r.exit_code_based_fail() for r in test_results):
            return ClassifiedTestOutcome.FAIL
        return ClassifiedTestOutcome.ERROR

    def add_data_with_label(
        self, results: typing.Sequence[TestResult], label: ClassifiedTestOutcome
    ):
        if label == ClassifiedTestOutcome.PASS:
            assert all(r.exit_code_based_pass() for r in results), results
        else:
            assert label == ClassifiedTestOutcome.FAIL, label
            assert all(r.exit_code_based_fail() for r in results)

    def text_summary(self, *, columns: int = 120, rows: int = 3) -> typing.List[str]:
        return []


def as_datetime(date: datetime.date) -> datetime.datetime:
    return datetime.datetime.combine(date, datetime.time())


def adjust_date(
    date: datetime.datetime,
    logger: logging.Logger,
    container_exists: typing.Callable[[datetime.date], bool],
    before: typing.Optional[datetime.date] = None,
    after: typing.Optional[datetime.date] = None,
    max_steps: int = 100,
) -> typing.Optional[datetime.date]:
    """
    Given a datetime that may have non-zero hour/minute/second/... parts, and where
    container_url(date.date()) might be a container that does not exist due to job
    failure, return a similar date where container_url(new_date) does exist, or None if
    no such container can be found.

    Arguments:
    date: date to adjust
    before: the returned date will be before this [optional]
    after: the returned date will be after this [optional]
    max_steps: maximum number of days away from the start date to venture
    """
    round_up = date.time() > datetime.time(12)
    down, up = (date.date(), -1), (date.date() + datetime.timedelta(days=1), +1)
    options = [up, down] if round_up else [down, up]
    n = 0
    while n < max_steps:
        plausible_directions = 0
        for start, direction in options:
            candidate = start + n * direction * datetime.timedelta(days=1)
            if (before is None or candidate < before) and (
                after is None or candidate > after
            ):
                plausible_directions += 1
                if container_exists(candidate):
                    if date.date() != candidate:
                        logger.debug(f"Adjusted {date} to {candidate}")
                    return candidate
                else:
                    logger.debug(f"{candidate} does not exist")
        n += 1
        if plausible_directions == 0:
            logger.info(
                f"Could not adjust {date} given before={before} and after={after}"
            )
            return None
    logger.info(f"Could not find an adjusted {date} within {max_steps} steps")
    return None


class DateTester(typing.Protocol):
    def __call__(
        self, date: datetime.date, *, test_output_log_level: int = logging.DEBUG
    ) -> TestResult:
        """
        Given a date, return the test result as obtained from the nightly container on
        that date.
        """
        ...


def container_search(
    *,
    container_exists: typing.Callable[[datetime.date], bool],
    container_passes: DateTester,
    start_date: typing.Optional[datetime.date],
    end_date: typing.Optional[datetime.date],
    logger: logging.Logger,
    skip_precondition_checks: bool,
    threshold_days: int,
) -> typing.Tuple[datetime.date, datetime.date]:
    adjust = functools.partial(
        adjust_date, logger=logger, container_exists=container_exists
    )
    # Figure out the end date of the search
    if end_date is not None:
        # --end-date was passed
        if not container_exists(end_date):
            raise Exception(f"--end-date={end_date} is not a valid container")
        skip_end_date_check = skip_precondition_checks
    else:
        # Default to the most recent container
        now = datetime.datetime.now()
        logger.info(f"Searching for a valid container date close to {now}")
        end_date = adjust(now)
        if end_date is None:
            raise Exception(f"Could not find a valid container from {now}")
        skip_end_date_check = False

    # Check preconditions; the test is supposed to fail on the end date.
    if skip_end_date_check:
        logger.info(f"Skipping check for end-of-range failure in {end_date}")
    else:
        logger.info(f"Checking end-of-range failure in {end_date}")
        # Print context for the IMPORTANT .info(...) to the console
        test_end_date = container_passes(end_date, test_output_log_level=logging.INFO)
        if not test_end_date.exit_code_based_fail():
            raise Exception(f"Could not reproduce failure in {end_date}")
        logger.info(
            "IMPORTANT: you should check that the test output above shows the "
            f"*expected* failure of your test case in the {end_date} container. It is "
            "very easy to accidentally provide a test case that fails for the wrong "
            "reason, which will not triage the correct issue!"
        )

    # Start the coarse, container-level, search for a starting point to the bisection range
    earliest_failure = end_date
    if start_date is None:
        # Start from the day before the end date.
        search_date = adjust(
            as_datetime(end_date) - datetime.timedelta(days=1), before=end_date
        )
        if search_date is None:
            raise Exception(f"Could not find a valid nightly before {end_date}")
        logger.info(
            f"Starting coarse search with {search_date} based on end_date={end_date}"
        )
        # We just found a starting value, we need to actually check if the test passes or
        # fails on it.
        skip_first_phase = False
    else:
        # If a start value seed was given, use it.
        if start_date >= end_date:
            raise Exception(f"{start_date} must be before {end_date}")
        if not container_exists(start_date):
            raise Exception(f"--start-date={start_date} is not a valid container")
        search_date = start_date
        assert search_date is not None  # for mypy
        # If --skip-precondition-checks and --start-date are both passed, we assume that
        # the test passed on the given --start-date and the first phase of the search can
        # be skipped
        skip_first_phase = skip_precondition_checks
        if not skip_first_phase:
            logger.info(
                f"Starting coarse search with {search_date} based on --start-date"
            )

    classifier = ExitCodeClassifier()
    if skip_first_phase:
        logger.info(f"Skipping check that the test passes on start_date={start_date}")
    else:
        # While condition prints an info message
        while classifier([container_passes(search_date)]) != ClassifiedTestOutcome.PASS:
            # Test failed on `search_date`, go further into the past
            earliest_failure = search_date
            new_search_date = adjust(
                as_datetime(end_date) - 2 * (end_date - search_date),
                before=search_date,
            )
            if new_search_date is None:
                raise Exception(
                    f"Could not find a passing nightly before {search_date}"
                )
            search_date = new_search_date

    # Continue the container-level search, refining the range until it meets the criterion
    # set by args.threshold_days. The test passed at range_start and not at range_end.
    range_start, range_end = search_date, earliest_failure
    logger.info(
        f"Coarse container-level search yielded [{range_start}, {range_end}]..."
    )
    while range_end - range_start > datetime.timedelta(days=threshold_days):
        range_mid = adjust(
            as_datetime(range_start) + 0.5 * (range_end - range_start),
            before=range_end,
            after=range_start,
        )
        if range_mid is None:
            # It wasn't possible to refine further.
            break
        outcome = classifier([container_passes(range_mid)])
        if outcome == ClassifiedTestOutcome.PASS:
            range_start = range_mid
        else:
            assert outcome == ClassifiedTestOutcome.FAIL
            range_end = range_mid
        logger.info(f"Refined container-level range to [{range_start}, {range_end}]")
    return range_start, range_end


class BuildAndTest(typing.Protocol):
    def __call__(
        self,
        *,
        versions: typing.Dict[str, str],
        test_repetition: int = 0,
        test_output_log_level: int = logging.DEBUG,
    ) -> TestResult:
        """
        Given an [unordered] set of {package_name: package_version}, build
        those package versions and return the test result.
        """
        ...


T = typing.TypeVar("T")
U = typing.TypeVar("U")
FlatVersionDict = typing.Tuple[typing.Tuple[str, str], ...]


def _first(xs: typing.Iterable[T]) -> T:
    return next(iter(xs))


def _not_first(d: typing.Dict[T, U]) -> typing.Iterable[typing.Tuple[T, U]]:
    return itertools.islice(d.items(), 1, None)


def _get_versions(
    *,
    logger: logging.Logger,
    primary: str,
    primary_index: typing.Optional[int] = None,
    versions: typing.OrderedDict[
        str, typing.Sequence[typing.Tuple[str, datetime.datetime]]
    ],
) -> typing.Tuple[typing.Dict[str, str], typing.Dict[str, int]]:
    if primary_index is None:
        primary_index = len(versions[primary]) // 2
        log_msg = f"Chose from {len(versions[primary])} remaining {primary} versions"
        log_msg += f" [{versions[primary][0][0]}, {versions[primary][-1][0]}]"
    else:
        log_msg = None
    bisect_versions = {}
    bisect_versions[primary], primary_date = versions[primary][primary_index]
    # Find the oldest versions of the other packages that are newer, or the last version
    indices = {primary: primary_index}
    for secondary, version_list in _not_first(versions):
        for index, (version, date) in enumerate(version_list):
            if date >= primary_date:
                break
        indices[secondary] = index
        bisect_versions[secondary] = version
        if log_msg is not None and len(version_list) > 1:
            log_msg += f", {len(version_list)} remaining {secondary} versions"
            log_msg += f" [{versions[secondary][0][0]}, {versions[secondary][-1][0]}]"
    if log_msg is not None:
        logger.info(log_msg)
    return bisect_versions, indices


def _earliest_versions(
    versions: typing.OrderedDict[
        str, typing.Sequence[typing.Tuple[str, datetime.datetime]]
    ],
) -> typing.Dict[str, str]:
    return {package: version_list[0][0] for package, version_list in versions.items()}


def _latest_versions(
    versions: typing.OrderedDict[
        str, typing.Sequence[typing.Tuple[str, datetime.datetime]]
    ],
) -> typing.Dict[str, str]:
    return {package: version_list[-1][0] for package, version_list in versions.items()}


def _strip_build_failures(versions: typing.Dict[str, str]) -> typing.Dict[str, str]:
    def remove_build_failures(ver):
        ver_bits = ver.split(",")
        if len(ver_bits) == 1:
            return ver
        elif ver_bits[1][0] == "[" and ver_bits[-1][-1] == "]":
            # v1,[v2,v3] -> v1
            return ver_bits[0]
        else:
            # [v1,v2],v3 -> v3
            assert ver_bits[0][0] == "[" and ver_bits[-2][-1] == "]", ver_bits
            return ver_bits[-1]

    return {k: remove_build_failures(v) for k, v in versions.items()}


# Fake version key used to distinguish between intentional repeated measurements of the
# same thing
_REPETITION_KEY = "#rep"

# Special version key used to denote versions of the test command itself. This has
# special treatment because, while it is included in the multi-project triage along
# with the various software versions, it is passed to the test command rather than
# being checked out/built/baked into the test container.
_WORKLOAD_VERSION_KEY = "WORKLOAD"


def version_cache_key(
    versions: typing.Dict[str, str],
    *,
    repetition: int = 0,
) -> FlatVersionDict:
    return tuple(
        sorted(_strip_build_failures(versions).items())
        + [(_REPETITION_KEY, str(repetition))]
    )


def version_search(
    *,
    versions: typing.OrderedDict[
        str, typing.Sequence[typing.Tuple[str, datetime.datetime]]
    ],
    build_and_test: BuildAndTest,
    logger: logging.Logger,
    skip_precondition_checks: bool,
    check_success_before_failure: bool = True,
    confirmation_iterations: int = 1,
    max_repetitions: typing.Optional[int] = None,
    result_cache: typing.Optional[typing.Dict[FlatVersionDict, TestResult]] = None,
    classifier: ExecutionClassifier = ExitCodeClassifier(),
) -> typing.Tuple[
    typing.Dict[str, str], typing.Sequence[TestResult], typing.Sequence[TestResult]
]:
    """
    Bisect a failure back to a single version of a single component.

    Arguments:
    versions: *ordered* dictionary of version sequences for different software
        packages, e.g. versions["jax"][0] is (commit_hash, date) of the passing JAX
        version. The ordering of packages has implications for precisely how
        the triage proceeds.
    build_and_test: callable that tests if a given vector of versions passes
    logger: instance to log output to
    skip_precondition_checks: if True, some tests that should pass/fail by
        construction are skipped
    check_success_before_failure: choose the order of precondition checks
    confirmation_iterations: check the known-bad/known-good inputs and the
        first-known-bad/last-known-good output at least this many *extra* times
    max_repetitions: if the classifier returns an ambiguous result and requests more
        data, this is the maximum number of extra runs, i.e. the maximum total number
        of times any given set of versions will be executed is `max_repetitions + 1`.
        Defaults to be `confirmation_iterations + 2`.
    result_cache: previously completed build/test results to reuse

    Returns a 3-tuple of (summary_dict, last_known_good, first_known_bad),
    where the last element can be None if skip_precondition_checks=True. The
    last two elements' .result fields will always be, respectively, True and
    False, but the other fields can be used to obtain stdout+stderr and
    output files from those test invocations.
    """
    if max_repetitions is None:
        max_repetitions = confirmation_iterations + 2
    assert max_repetitions >= confirmation_iterations, (
        max_repetitions,
        confirmation_iterations,
    )
    if result_cache is None:
        result_cache = {}

    assert all(len(version_list) for version_list in versions.values()), (
        "Not enough versions: need at least one version for each package",
        versions,
    )
    assert sum(map(len, versions.values())) > len(versions), (
        "Not enough versions: need multiple versions for at least one package",
        versions,
    )

    def build_cached(
        bisect_versions,
        *,
        test_output_log_level: int = logging.DEBUG,
        repetition: int = 0,
    ):
        cache_key = version_cache_key(bisect_versions, repetition=repetition)
        bisect_result = result_cache.get(cache_key)
        if bisect_result is not None:
            logger.info(
                f"Reusing cached result for {dict(cache_key)}: "
                f"{bisect_result.result}: {bisect_result.metrics}"
            )
            return bisect_result
        bisect_result = build_and_test(
            versions=_strip_build_failures(bisect_versions),
            test_output_log_level=test_output_log_level,
            test_repetition=repetition,
        )
        logger.info(
            f"New result for {dict(cache_key)}: {bisect_result.result}: "
            f"{bisect_result.metrics}"
        )
        result_cache[cache_key] = bisect_result
        return bisect_result

    def _check(
        good_or_bad, check_versions, desired_outcome, CouldNotReproduceDesiredOutcome
    ):
        # Verify that we can build successfully and that the test gives the expected results.
        logger.info(
            f"Verifying test outcome using {good_or_bad} versions "
            f"{confirmation_iterations + 1} times"
        )
        # Run `confirmation_iterations + 1` runs to confirm non-flakiness (boolean
        # triage) and/or seed the classifier state (metric-based triage)
        for n in range(confirmation_iterations + 1):
            test_output_log_level = (
                logging.INFO
                if n == 0 and desired_outcome == ClassifiedTestOutcome.FAIL
                else logging.DEBUG
            )
            check = build_cached(
                check_versions,
                repetition=n,
                test_output_log_level=test_output_log_level,
            )
            if check.result == TestExecutionOutcome.BUILD_FAILURE:
                err = f"Build failure attempting to reproduce result with {good_or_bad} versions"
                logger.fatal(err)
                logger.fatal(check.build_stdouterr)
                raise CouldNotReproduceDesiredOutcome(err)
            outcome = classifier([check])
            assert outcome != ClassifiedTestOutcome.ERROR
            if outcome == ClassifiedTestOutcome.AMBIGUOUS:
                # For metric-based triage, these up-front checking loops are important
                # to help initialise the classifier state. Rather than spending a long
                # time looping, force ambiguous results to resolve in the direction of
                # our expectations
                logger.info(
                    f"Ambiguous result when attempting {good_or_bad} version "
                    "verification, forcing it into the classifier as labelled data..."
                )
                classifier.add_data_with_label([check], desired_outcome)
            classifier_status = classifier.text_summary()
            if len(classifier_status):
                logger.info("Updated classifier status:")
                for row in classifier_status:
                    logger.info(row)
            if outcome == desired_outcome:
                if desired_outcome == ClassifiedTestOutcome.FAIL:
                    logger.log(
                        test_output_log_level,
                        "Verified test failure using 'bad' versions. IMPORTANT: you should "
                        "check that the test output above shows the *expected* failure of your "
                        "test case. It is very easy to accidentally provide a test case that "
                        "fails for the wrong reason, which will not triage the correct issue!",
                    )
                else:
                    logger.info(f"Verified test result using {good_or_bad} versions.")
            elif outcome in {ClassifiedTestOutcome.PASS, ClassifiedTestOutcome.FAIL}:
                err = f"Could not reproduce results with {good_or_bad} versions ({outcome}, iteration {n})"
                logger.fatal(err)
                logger.fatal(check.stdouterr)
                raise CouldNotReproduceDesiredOutcome(err)

    def _check_success():
        _check(
            "'good'",
            _earliest_versions(versions),
            ClassifiedTestOutcome.PASS,
            CouldNotReproduceSuccess,
        )

    def _check_failure():
        _check(
            "'bad'",
            _latest_versions(versions),
            ClassifiedTestOutcome.FAIL,
            CouldNotReproduceFailure,
        )

    if skip_precondition_checks:
        logger.info("Skipping check that 'good' and 'bad' versions reproduce success")
    elif check_success_before_failure:
        _check_success()
        _check_failure()
    else:
        _check_failure()
        _check_success()

    # Make sure that the primary package (zeroth entry in `versions`) has
    # multiple versions. If it doesn't, we can permute it to the end straight
    # away as there is nothing to be done. We already asserted above that at
    # least one package has multiple versions.
    while len(_first(versions.values())) == 1:
        versions.move_to_end(_first(versions.keys()))

    # Finally, start bisecting. The iteration order of `versions` defines the
    # algorithm: we start bisecting using the first package (e.g. XLA), and
    # take the oldest versions of the other packages that are newer than the
    # first package.
    primary = _first(versions.keys())
    get_versions = functools.partial(_get_versions, logger=logger, primary=primary)

    def find_successful_build(versions):
        # Try to find a set of versions where the build does not fail, starting with
        # the set of versions that implement in a binary search for the actual test failure
        bisect_versions, indices = get_versions(versions=versions)
        bisect_result = build_cached(bisect_versions)
        if bisect_result.result != TestExecutionOutcome.BUILD_FAILURE:
            return bisect_result, bisect_versions
        logger.info(
            f"Encountered build failure using index={indices[primary]} of "
            f"the remaining {len(versions[primary])} {primary} versions"
        )
        # Versions based on the middle of the remaining `primary` commits led to a
        # build failure (n), but the endpoints build OK (y).
        # y -- ? -- n -- ? -- y
        # |         |         |
        # start   middle     end
        #
        # We may know about other build failures (n values) in the range due to
        # previous iterations.
        #       cached
        #         |
        # y???nnnnnnnnn???????????y
        # |           |           |
        # start     middle       end
        #
        # And the hope of this logic is that we will find either an early version where
        # the build succeeds and the test fails (so we can throw away the range with
        # build failures), or a late version where the build succeeds and the test
        # succeeds so we can do the same. The somewhat arbitrary logic here is to take
        # the shorter y??????n run and refine it in the hope one of the ? is a y.
        assert (
            result_cache[version_cache_key(_earliest_versions(versions))].result
            != TestExecutionOutcome.BUILD_FAILURE
        ), result_cache[version_cache_key(_earliest_versions(versions))].result
        build_statuses = [(True, {p: 0 for p in versions})]
        for n in range(1, len(versions[primary]) - 1):
            versions_n, indices_n = get_versions(primary_index=n, versions=versions)
            result_n = result_cache.get(version_cache_key(versions_n))
            assert (
                result_n is None
                or result_n.result == TestExecutionOutcome.BUILD_FAILURE
            )
            build_statuses.append((None if result_n is None else False, indices_n))
        assert (
            result_cache[version_cache_key(_latest_versions(versions))].result
            != TestExecutionOutcome.BUILD_FAILURE
        ), result_cache.get(version_cache_key(_latest_versions(versions))).result
        build_statuses.append((True, {p: len(vs) - 1 for p, vs in versions.items()}))
        assert len(build_statuses) == len(versions[primary])
        # build_statuses is something like [True, None, False, None, True]; identify
        # the ranges [b, None, ..., not b] i.e [0, 2] and [2, 4] in the example, and do
        # binary searches in them
        start, start_v = 0, True
        ranges = []
        for n, (v, _) in enumerate(build_statuses):
            if v == start_v:
                start = n
            elif v is not None and v != start_v:
                if n - start > 1:
                    # Need some None values in betwen
                    ranges.append((start, n))
                start, start_v = n, v
        assert len(ranges) <= 2
        # Start with the narrower range
        ranges.sort(key=lambda v: v[1] - v[0])
        for start, end in ranges:
            start_status, start_indices = build_statuses[start]
            end_status, end_indices = build_statuses[end]
            assert start_status is not None
            assert end_status is not None
            assert start_status != end_status
            assert all(v is None for v, _ in build_statuses[start + 1 : end - 1])
            range_versions = {
                package: versions[package][start_index : end_indices[package] + 1]
                for package, start_index in start_indices.items()
            }
            while len(range_versions[primary]) > 2:
                bisect_versions, indices = get_versions(versions=range_versions)
                bisect_result = build_cached(bisect_versions)
                if bisect_result.result != TestExecutionOutcome.BUILD_FAILURE:
                    return bisect_result, bisect_versions
                logger.info(
                    "Encountered another build failure when refining "
                    f"{len(range_versions[primary])} {primary} versions in "
                    f"{len(ranges)} candidate range(s)"
                )

                def _slice(index):
                    # range was (Y??n if start_status else n??Y) and a ? turned out to be an n
                    return (
                        slice(None, index + 1) if start_status else slice(index, None)
                    )

                range_versions = {
                    package: range_versions[package][_slice(index)]
                    for package, index in indices.items()
                }
        return bisect_result, bisect_versions

    def _outcome_with_retries(test_versions, *, min_runs, max_runs):
        results = [build_cached(test_versions, repetition=n) for n in range(min_runs)]
        outcome = classifier(results)
        if outcome == ClassifiedTestOutcome.AMBIGUOUS:
            logger.info(
                f"Ambiguous result from {len(results)} measurements, running "
                f"up to {max_runs - min_runs} extra measurements to disambiguate."
            )
            for n in range(min_runs, max_runs):
                results.append(build_cached(test_versions, repetition=n))
                outcome = classifier(results)
                if outcome != ClassifiedTestOutcome.AMBIGUOUS:
                    logger.info(
                        f"Got non-ambiguous outcome {outcome} from {len(results)} "
                        "measurements."
                    )
                    break
        return outcome, results

    while len(versions[primary]) > 2:
        bisect_result, bisect_versions = find_successful_build(versions=versions)

        # reconstruct the indices in `versions` of the versions in `bisect_versions`
        def _index(pkg, ver):
            for n, (v, _) in enumerate(versions[pkg]):
                if v == ver:
                    return n
            assert False

        indices = {pkg: _index(pkg, ver) for pkg, ver in bisect_versions.items()}
        outcome, _ = _outcome_with_retries(
            bisect_versions, min_runs=1, max_runs=max_repetitions + 1
        )
        classifier_status = classifier.text_summary()
        if len(classifier_status):
            logger.info("Updated classifier status:")
            for row in classifier_status:
                logger.info(row)
        if outcome == ClassifiedTestOutcome.PASS:
            # Test passed, continue searching in the second half
            for package, index in indices.items():
                versions[package] = versions[package][index:]
        elif outcome == ClassifiedTestOutcome.FAIL:
            # Test failed, continue searching in the first half
            for package, index in indices.items():
                versions[package] = versions[package][: index + 1]
        elif outcome == ClassifiedTestOutcome.AMBIGUOUS:
            err = f"Could not reach an unambiguous result with {max_repetitions + 1} measurements."
            logger.fatal(err)
            raise Exception(err)
        else:
            assert outcome == ClassifiedTestOutcome.ERROR, outcome
            # Did not succeed in finding a version of `primary` that gives results.
            # This does not quite mean that all versions fail, as the algorithm will
            # not try all versions in ranges with failures at both ends
            #
            #       might
            #          \
            # Y n n n Y n n n n n n n Y (build passes Y/n)
            # |     |     |           |
            # start Q1  middle       end
            #
            # as given middle=fail, and Q1=fail the points between Q1 and middle will
            # not be checked.
            n_primary = len(versions[primary])
            build_fail_commits = []
            for n in range(1, n_primary - 1):
                versions_n, _ = get_versions(primary_index=n, versions=versions)
                # Should have been a build failure if tested.
                result_n = result_cache.get(version_cache_key(versions_n))
                if result_n is not None:
                    assert result_n.result == TestExecutionOutcome.BUILD_FAILURE, (
                        result_n
                    )
                build_fail_commits.append(versions_n[primary])
            logger.warning(
                f"Could not triage {primary} to a single version due to build "
                f"failures, adding {n_primary - 2} build failure version(s) to both "
                "last-known-good and first-known-bad versions to represent this lack "
                "of signal. The tool has not positively verified that *all* of these "
                "commits actually lead to build failures."
            )
            test_pass_commit, test_pass_date = versions[primary][0]
            test_fail_commit, test_fail_date = versions[primary][-1]
            test_pass_range = f"{test_pass_commit},[{','.join(build_fail_commits)}]"
            test_fail_range = f"[{','.join(build_fail_commits)}],{test_fail_commit}"
            versions[primary] = [
                (test_pass_range, test_pass_date),
                (test_fail_range, test_fail_date),
            ]

    # Primary bisection converged, meaning that there are two remaining
    # versions there, but possibly more of the other packages:
    #     pass        fail
    # PRI  pX -------- pZ
    # SEC  sX -- sY -- sZ
    # TER  tX --- tY - tZ
    # ...
    # If (pX, sZ, tZ, ...) passes, triage has converged: pZ is the culprit and
    # (sZ, tZ, ...) gives the reference versions of the other projects.
    #
    # Otherwise, if it fails, pZ is innocent and we can continue triaging
    # with the old primary package always fixed to pX.
    assert len(versions[primary]) == 2, versions
    (good_version, _), (bad_version, _) = versions[primary]
    blame_versions = _latest_versions(versions)  # [pZ,] sZ, tZ, ...
    blame_versions[primary] = good_version  # pX
    logger.info(
        f"Two {primary} versions remain, checking if {versions[primary][-1][0]} is the "
        "culprit"
    )
    # FIXME: It's possible that this combination has already been tested at this point,
    # so the classifier may have seen some values before and they may, therefore, get
    # double counted in its internal state.
    blame_outcome, _ = _outcome_with_retries(
        blame_versions, min_runs=1, max_runs=max_repetitions + 1
    )
    if blame_outcome == ClassifiedTestOutcome.PASS:
        # Test passed with {pX, sZ, tZ, ...} but was known to fail with
        # {pZ, sZ, tZ, ...}. Therefore pZ is the culprit version.
        log_str = f"Bisected failure to {primary} {bad_version} with"
        for secondary, secondary_version in _not_first(blame_versions):
            log_str += f" {secondary} {secondary_version}"
        logger.info(log_str)
        ret = {
            f"{primary}_bad": bad_version,
            f"{primary}_good": good_version,
        }
        first_known_bad = {primary: bad_version}
        for secondary, secondary_version in _not_first(blame_versions):
            first_known_bad[secondary] = secondary_version
            ret[f"{secondary}_ref"] = secondary_version
        # `blame` represents the last-known-good test result, first-known-bad was seen
        # earlier, or possibly not at all e.g. if `skip_precondition_checks` is True
        # and first-known-bad was the end of the search range.
        first_known_bad_result = result_cache.get(version_cache_key(first_known_bad))
        if first_known_bad_result is None:
            if skip_precondition_checks:
                logger.info(
                    "Did not find a cached result for the first-known-bad "
                    f"configuration {first_known_bad}, this is probably due to "
                    "--skip-precondition-checks having been passed."
                )
            else:
                logger.error(
                    "Did not find a cached result for the first-known-bad "
                    f"configuration {first_known_bad}, this is unexpected!"
                )
        # Run the test case a few more times as a final line of defence against flakiness.
        # `blame_versions` are last-known-good, `first_known_bad` are what they say.
        # We just tested `blame_versions`, so start with `first_known_bad`.
        # FIXME: as above this may double-count in the classifier state.
        bad_outcome, confirm_bad = _outcome_with_retries(
            first_known_bad,
            min_runs=1 + confirmation_iterations,
            max_runs=1 + max_repetitions,
        )
        for row in classifier.text_summary():
            logger.info(row)
        assert bad_outcome == ClassifiedTestOutcome.FAIL, (bad_outcome, confirm_bad)
        good_outcome, confirm_good = _outcome_with_retries(
            blame_versions,
            min_runs=1 + confirmation_iterations,
            max_runs=1 + max_repetitions,
        )
        for row in classifier.text_summary():
            logger.info(row)
        assert good_outcome == ClassifiedTestOutcome.PASS, (good_outcome, confirm_good)
        return ret, confirm_good, confirm_bad
    elif blame_outcome == ClassifiedTestOutcome.FAIL:
        # Test failed with both {pX, sZ, tZ, ...} and {pZ, sZ, tZ, ...}, so
        # we can fix the primary package to pX and recurse with the old
        # secondary package (s) as the new primary, and the old primary
        # package (p) moved to the end.
        versions[primary] = [versions.pop(primary)[0]]
        return version_search(
            build_and_test=build_and_test,
            versions=versions,
            logger=logger,
            skip_precondition_checks=True,
            result_cache=result_cache,
            confirmation_iterations=confirmation_iterations,
            classifier=classifier,
        )
    else:
        err = f"Could not handle blame outcome {blame_outcome}"
        logger.fatal(err)
        raise Exception(err)

FROM x
COPY src /src
RUN pip install /src
